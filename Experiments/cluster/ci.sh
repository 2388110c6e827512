#!/usr/bin/env bash
# CI steps for sweeps (called from .ci/run): a small sweep in release mode, inspect + CSV, the
# Python plots and checks, and the Slurm job-array check (on the one-node cluster that
# Experiments/cluster/one-node-slurm starts; it installs slurm-wlm if missing).
#   bash Experiments/cluster/ci.sh            (SKIP_SLURM=1 skips the Slurm part)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# $CONTINUAL_BIN (CI builds the release CLI in its own scratch directory): use it as it is.
if [[ -n ${CONTINUAL_BIN:-} ]]; then
    bin=$CONTINUAL_BIN
else
    swift build -c release --product continual
    bin=$root/.build/release/continual
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" sweep Experiments/sweeps/tiny_sweep.json -o "$work/tiny.h5" --plain --jobs 2
"$bin" inspect "$work/tiny.h5"
"$bin" inspect "$work/tiny.h5" --csv > "$work/tiny.csv"
[ "$(wc -l < "$work/tiny.csv")" -eq 25 ] || { echo "CSV should have 25 lines" >&2; exit 1; }
# Python analysis package (python/; .ci/run installs it): figures checked, metrics recomputed.
command -v continualkit >/dev/null || python3 -m pip install -q --disable-pip-version-check ./python
continualkit plot "$work/tiny.h5" -o "$work/plots" --format png --check
continualkit check "$work/tiny.h5" --expect-runs 24
# Population runs: forgetting is the mean of per-user values (recomputed from accuracy_matrices).
"$bin" sweep Experiments/sweeps/tiny_population_sweep.json -o "$work/pop.h5" --plain --jobs 2
continualkit check "$work/pop.h5" --expect-runs 8
if [ "${SKIP_SLURM:-0}" != 1 ]; then
  CONTINUAL=$bin bash Experiments/cluster/ci_slurm_check.sh Experiments/sweeps/tiny_sweep.json 3
fi
echo "sweep CI: OK"
