#!/usr/bin/env bash
# CI: run a small sweep as a real Slurm job array (one-node cluster on loopback) through
# submit.sh, then check that the merged file's /summary equals the unsharded sweep's
# (every column except wall times).
#   Experiments/cluster/ci_slurm_check.sh [EXPERIMENT.json] [SHARDS]
# Environment: CONTINUAL (binary; default .build/release/continual, else .build/debug/continual),
# SLURM_TOOL (default ../shared/tools/one-node-slurm from the repo root), SLURM_CI_* (see the tool).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
experiment=$(realpath "${1:-$root/Experiments/sweeps/tiny_sweep.json}")
shards=${2:-3}
continual=${CONTINUAL:-}
if [ -z "$continual" ]; then
  for c in "$root/.build/release/continual" "$root/.build/debug/continual"; do
    [ -x "$c" ] && { continual=$c; break; }
  done
fi
[ -n "$continual" ] || { echo "no continual binary; build it first (swift build -c release --product continual)" >&2; exit 2; }
continual=$(realpath "$continual")
tool=${SLURM_TOOL:-$root/../shared/tools/one-node-slurm}
[ -f "$tool" ] || { echo "one-node-slurm not found at $tool" >&2; exit 2; }

work=$(mktemp -d)
export SLURM_CI_WORKDIR=$work
export SLURM_CI_CPUS=${SLURM_CI_CPUS:-4}
echo "[slurm-check] reference: unsharded sweep of $experiment"
"$continual" sweep "$experiment" -o "$work/reference.h5" --plain --overwrite --jobs 2 >/dev/null

# shellcheck source=/dev/null
source "$tool"            # defines slurm_ci_up/wait/down; turns on set -euo pipefail
trap 'slurm_ci_down; rm -rf "$work"' EXIT
slurm_ci_up
cd "$work"
ids=$(CONTINUAL="$continual" "$root/Experiments/cluster/submit.sh" "$experiment" "$shards" "$work/merged.h5")
read -r jid mid <<<"$ids"
echo "[slurm-check] array job $jid ($shards shards), merge job $mid"
if ! slurm_ci_wait "$jid" "$mid"; then
  tail -n 20 logs/* >&2 || true
  exit 1
fi
cat logs/ck-merge_*.out
count=$(ls "$work/merged.shards"/shard-*.h5 | wc -l)
[ "$count" -eq "$shards" ] || { echo "expected $shards shard files, found $count" >&2; exit 1; }
python3 -m continualkit compare "$work/reference.h5" "$work/merged.h5"   # pip install ./python
echo "[slurm-check] OK: merged /summary of the job array equals the unsharded sweep's"

