#!/usr/bin/env bash
# CI: the figures of the README's experiments, drawn from real results and checked (every file
# exists, PNGs are 300 dpi, sizes bounded, not blank). (The HTML report is checked in Chromium by
# pytest python; it redraws the same figures as SVG, so it is not repeated here.)
#   bash Experiments/tools/ci_figures.sh [CONTINUAL_BINARY [RESULTS_DIR]]
# RESULTS_DIR: results files of the same experiments already written (CI passes check_docs'
# --keep-results directory, whose commands run five of them); those are plotted, not run again.
# Runs regularisation, replay, PEFT, population, device-schedule and federated experiments in full with the
# release build (about a minute of training on 2 cores), then `continualkit plot --check`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${1:-$root/.build/release/continual}
reuse=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for name in regularisation replay peft population_habit device_schedules federated_habit; do
    start=$(date +%s)
    if [ -n "$reuse" ] && [ -f "$reuse/$name.h5" ]; then
        cp "$reuse/$name.h5" "$work/$name.h5"
    elif [ "$name" = population_habit ] || [ "$name" = federated_habit ]; then
        "$bin" run "$root/Experiments/$name.json" -o "$work/$name.h5" -q --jobs 2 >/dev/null
    else
        "$bin" sweep "$root/Experiments/$name.json" -o "$work/$name.h5" --plain --jobs 2 >/dev/null
    fi
    python3 -m continualkit plot "$work/$name.h5" -o "$work/figures/$name" --format png --check -q
    echo "[figures] $name: $(ls "$work/figures/$name" | wc -l) files, $(( $(date +%s) - start )) s"
done
