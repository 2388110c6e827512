#!/bin/sh
# The next full MNIST rerun (issue 40; docs/mnist-tables.md, "Caveat"): the streams' sweeps not yet rerun,
# in turn, each resumable. A kill loses no finished run or selection run: run this again and it
# continues where it stopped (--resume-or-start). Files written by make_mnist_tables.py --next.
#   sh Experiments/next/run.sh            # CONTINUAL_BIN=... to use another binary
set -e
cd "$(dirname "$0")/../.."
BIN=${CONTINUAL_BIN:-.build-release/release/continual}
for name in mnist_permuted_task_class; do
    echo "$(date -u +%FT%TZ) start $name" >> "results/next_$name.log"
    "$BIN" sweep "Experiments/next/$name.json" -o "results/next_$name.h5" --jobs 2 --resume-or-start --plain \
        >> "results/next_$name.log" 2>&1
    echo "$(date -u +%FT%TZ) done $name" >> "results/next_$name.log"
done
