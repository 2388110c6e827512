#!/bin/sh
# CI: export every generated scenario to the HDF5 scenario layout and check the files (and the
# committed datasets/digits.h5) with h5py; also round-trips one export through the `dataset`
# scenario. Usage: datasets/ci_export_check.sh [path/to/continual]   (default .build/release/continual)
set -eu
CONTINUAL=${1:-.build/release/continual}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for name in habit_drift notification_engagement app_usage health_baseline split_digits permuted_digits; do
    "$CONTINUAL" scenario export "$name" --seed 3 -o "$OUT/$name.h5"
done
echo '{"train_per_experience": 300, "test_per_experience": 100, "drift": {"type": "gradual", "width": 200}, "cut": "month"}' > "$OUT/habit_options.json"
"$CONTINUAL" scenario export habit_drift --config "$OUT/habit_options.json" -o "$OUT/habit_monthly.h5"
python3 datasets/check_export.py "$OUT"/*.h5 datasets/digits.h5
# Re-export what the dataset scenario reads: the file must come back identical in content.
echo "{\"path\": \"$OUT/habit_monthly.h5\"}" > "$OUT/reimport.json"
"$CONTINUAL" scenario export dataset --config "$OUT/reimport.json" -o "$OUT/reimported.h5"
python3 - "$OUT/habit_monthly.h5" "$OUT/reimported.h5" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
def walk(g, out, prefix=""):
    for k, v in g.items():
        if isinstance(v, h5py.Group): walk(v, out, prefix + k + "/")
        else: out[prefix + k] = v[()]
    return out
da, db = walk(a, {}), walk(b, {})
assert da.keys() == db.keys(), (da.keys(), db.keys())
for k in da: assert np.array_equal(da[k], db[k]), k
print("dataset re-import: identical")
PY
