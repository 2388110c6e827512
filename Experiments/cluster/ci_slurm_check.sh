#!/usr/bin/env bash
# CI: a sweep as a real Slurm job array on the repository's own one-node cluster (loopback),
# checking what a user relies on when a shard is lost:
#   1. submit.sh (array 0..N-1 + afterok merge): the merged /summary equals the unsharded sweep's
#      (every column except wall times);
#   2. delete one shard file, resubmit only that array index (sbatch --array=K): exactly that
#      shard reruns (same run ids, 1/N of the runs), the other shard files are not touched, and
#      the merge of the repaired set equals the reference again;
#   3. a 1-based array (--array=1-N) into a new folder: merge.sbatch finds every shard and the
#      merged /summary equals the reference.
#   Experiments/cluster/ci_slurm_check.sh [EXPERIMENT.json] [N] [K]
# Environment: CONTINUAL (binary; default .build/release/continual, else .build/debug/continual),
# CK_SLURM_* (see one-node-slurm; CK_SLURM_CPUS defaults to 4 here).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
experiment=$(realpath "${1:-$root/Experiments/sweeps/tiny_sweep.json}")
n=${2:-3}
k=${3:-1}
continual=${CONTINUAL:-}
if [ -z "$continual" ]; then
  for c in "$root/.build/release/continual" "$root/.build/debug/continual"; do
    [ -x "$c" ] && { continual=$c; break; }
  done
fi
[ -n "$continual" ] || { echo "no continual binary; build it first (swift build -c release --product continual)" >&2; exit 2; }
continual=$(realpath "$continual")
export CONTINUAL=$continual
say() { echo "[slurm-check] $*"; }
fail() { echo "[slurm-check] FAILED: $*" >&2; exit 1; }
runs_in() { echo $(( $("$continual" inspect "$1" --csv | wc -l) - 1 )); }
run_ids() { "$continual" inspect "$1" --csv | awk -F, 'NR>1{print $1}' | sort; }

work=$(mktemp -d)
export CK_SLURM_DIR=$work/slurm CK_SLURM_CPUS=${CK_SLURM_CPUS:-4}
say "reference: unsharded sweep of $experiment"
"$continual" sweep "$experiment" -o "$work/reference.h5" --plain --overwrite --jobs 2 >/dev/null
total=$(runs_in "$work/reference.h5")
[ $((total % n)) = 0 ] || fail "this check wants a run count ($total) divisible by N ($n)"
per_shard=$((total / n))

# shellcheck source=one-node-slurm
source "$here/one-node-slurm"
trap 'ck_slurm_down; rm -rf "$work"' EXIT
ck_slurm_up
cd "$work"
wait_jobs() { ck_slurm_wait "$@" || { tail -n 20 logs/* >&2 || true; fail "jobs $* did not all complete"; }; }
compare() { python3 -m continualkit compare "$work/reference.h5" "$1"; }   # pip install ./python

say "1. submit.sh: array 0-$((n - 1)) and the merge"
read -r jid mid <<<"$("$here/submit.sh" "$experiment" "$n" "$work/merged.h5")"
wait_jobs "$jid" "$mid"
for ((i = 0; i < n; i++)); do
  [ "$(runs_in "merged.shards/shard-$i.h5")" = "$per_shard" ] || fail "shard $i should hold $per_shard runs"
done
compare "$work/merged.h5"

say "2. delete shard $k, resubmit --array=$k only"
run_ids "merged.shards/shard-$k.h5" > ids_before.txt
for ((i = 0; i < n; i++)); do
  [ "$i" = "$k" ] || stat -c '%n %Y %s' "merged.shards/shard-$i.h5"
done > others_before.txt
(cd merged.shards && sha256sum $(ls shard-*.h5 | grep -v "shard-$k.h5")) > others_sha_before.txt
rm "merged.shards/shard-$k.h5"
sleep 1   # so that a rewritten file would show a new modification time
jid=$(sbatch --parsable --array="$k" "$here/sweep_array.sbatch" "$experiment" "$work/merged.shards" "$n"); jid=${jid%%;*}
wait_jobs "$jid"
grep -q "shard $k/$n" logs/ck-sweep_"$jid"_"$k".out || fail "task $k did not run shard $k/$n"
[ "$(runs_in "merged.shards/shard-$k.h5")" = "$per_shard" ] || fail "rerun shard $k should hold $per_shard runs, holds $(runs_in "merged.shards/shard-$k.h5")"
run_ids "merged.shards/shard-$k.h5" | cmp -s - ids_before.txt || fail "rerun shard $k holds other runs than before"
for ((i = 0; i < n; i++)); do
  [ "$i" = "$k" ] || stat -c '%n %Y %s' "merged.shards/shard-$i.h5"
done | cmp -s - others_before.txt || fail "another shard file changed"
(cd merged.shards && sha256sum -c --quiet ../others_sha_before.txt) || fail "another shard file's bytes changed"
say "   shard $k rerun alone: $per_shard runs, same ids; the other $((n - 1)) shard files untouched"
mid=$(sbatch --parsable "$here/merge.sbatch" "$work/repaired.h5" "$work/merged.shards" "$n"); mid=${mid%%;*}
wait_jobs "$mid"
compare "$work/repaired.h5"

say "3. a 1-based array, --array=1-$n, and merge.sbatch after it"
jid=$(sbatch --parsable --array=1-"$n" "$here/sweep_array.sbatch" "$experiment" "$work/onebased.shards" "$n"); jid=${jid%%;*}
mid=$(sbatch --parsable --dependency=afterok:"$jid" --kill-on-invalid-dep=yes \
  "$here/merge.sbatch" "$work/onebased.h5" "$work/onebased.shards" "$n"); mid=${mid%%;*}
wait_jobs "$jid" "$mid"
for ((i = 0; i < n; i++)); do
  [ "$(runs_in "onebased.shards/shard-$i.h5")" = "$per_shard" ] || fail "1-based: shard $i should hold $per_shard runs"
done
compare "$work/onebased.h5"
say "OK: $n-shard array, a single resubmitted shard and a 1-based array all merge to the unsharded /summary"
