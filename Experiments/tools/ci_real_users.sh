#!/usr/bin/env bash
# CI (issue 27): convert a slice of UCI HAPT (persons 1-3) from the installed package twice
# (identical bytes), check it from Swift against the converter's statistics, and run one
# experiment on it: Experiments/real_har.json's population and a federated variant, 1 seed.
# Usage: bash Experiments/tools/ci_real_users.sh .build/release/continual
set -euo pipefail
bin="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
continualkit datasets hapt -o "$dir/hapt.h5" --users 1,2,3 --stats "$dir/stats.json"
continualkit datasets hapt -o "$dir/again.h5" --users 1,2,3 >/dev/null
cmp "$dir/hapt.h5" "$dir/again.h5" && echo "two conversions: identical bytes"
continualkit datasets digest "$dir/hapt.h5" >/dev/null && echo "content digest: recomputed = stored"
# A missing file names the command that makes it.
if "$bin" validate Experiments/real_har.json >"$dir/v.txt" 2>&1 && ! test -e datasets/hapt.h5; then
  echo "validate passed without datasets/hapt.h5"; exit 1
fi
test -e datasets/hapt.h5 || grep -q "continualkit datasets hapt -o" "$dir/v.txt"
CONTINUALKIT_DATASET_STATS="$dir/stats.json" swift test --skip-build --filter RealDataFileTests 2>&1 | tail -2
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
e = json.load(open("Experiments/real_har.json"))
e["name"] = "real_har_ci"
e["scenario"]["path"] = d + "/hapt.h5"
e["population"]["users"] = 3
e["training"]["epochs"] = 5
e["variants"] = [v for v in e["variants"] if v["name"] in ("naive", "replay", "federated_fedavg_finetune")]
e["variants"][-1]["federation"]["rounds"] = 10
e["sweep"] = {"parameters": {"seed": [1]}}
json.dump(e, open(d + "/real_har_ci.json", "w"))
PY
"$bin" run "$dir/real_har_ci.json" -o "$dir/r.h5" -q
continualkit check "$dir/r.h5" | tail -1
continualkit table "$dir/r.h5" --metrics acc,bwt | head -12
