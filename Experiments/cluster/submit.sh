#!/usr/bin/env bash
# Submits a sweep as a Slurm job array of N shards plus a dependent merge job.
#   Experiments/cluster/submit.sh EXPERIMENT.json N OUT.h5 [extra sbatch options for the shards...]
# Prints "ARRAY_JOB_ID MERGE_JOB_ID". Shards go to OUT.shards/, logs to ./logs/.
# CONTINUAL=/path/to/continual selects the binary (exported to the jobs; sbatch's default
# --export=ALL passes the environment on).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
experiment=${1:?usage: submit.sh EXPERIMENT.json N OUT.h5 [sbatch options...]}
n=${2:?missing N (number of shards)}
out=${3:?missing OUT.h5}
shift 3
shard_dir="${out%.h5}.shards"
mkdir -p logs "$shard_dir"
export CONTINUAL=${CONTINUAL:-continual}
# Fail fast on a bad experiment file instead of N failing array tasks.
"$CONTINUAL" validate "$experiment" >/dev/null
jid=$(sbatch --parsable --array=0-$((n - 1)) "$@" "$here/sweep_array.sbatch" "$experiment" "$shard_dir" "$n")
jid=${jid%%;*}
mid=$(sbatch --parsable --dependency=afterok:"$jid" --kill-on-invalid-dep=yes \
  "$here/merge.sbatch" "$out" "$shard_dir" "$n")
mid=${mid%%;*}
echo "$jid $mid"
