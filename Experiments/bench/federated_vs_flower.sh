#!/usr/bin/env bash
# Federated speed, side by side in one invocation (issue 16): ContinualKit's
# federated simulation vs Flower's Simulation Engine vs a plain PyTorch loop, on
# the same workload (10,000 clients, 100 rounds, 10 % per round, one local epoch
# of SGD over 120 samples, batch 32, lr 0.05, MLP 10-16-8-2, sample-weighted FedAvg).
#
#   Experiments/bench/federated_vs_flower.sh [output.json]
#
# Environment (defaults in brackets):
#   CONTINUAL        ContinualKit CLI [.build/release/continual]
#   EXPERIMENT       ContinualKit experiment [Experiments/bench/federated_10k.json]
#   FLOWER_PYTHON    Python with flwr[simulation] and torch [/work/venv-flower/bin/python]
#   CLIENTS ROUNDS   workload size [10000 100]
#   FLOWER_ROUNDS    rounds Flower actually runs [5]; fewer than ROUNDS means its
#                    full-run time is EXTRAPOLATED from its steady rounds (labelled)
#   FLOWER_ENGINES   Flower variants [flower] (add flower-numpy for NumPyClient)
#   TORCH_ROUNDS     rounds of the plain PyTorch loop [ROUNDS]
#   SKIP_CK=1        leave ContinualKit out (table without ratios)
#
# Flower is a benchmark dependency only (never CI's): install it outside the repo,
#   python3 -m venv /work/venv-flower
#   /work/venv-flower/bin/pip install "flwr[simulation]" torch
# (see docs/benchmarks.md, "Federated: ContinualKit vs Flower").
set -euo pipefail

cd "$(dirname "$0")/../.."
CONTINUAL=${CONTINUAL:-.build/release/continual}
EXPERIMENT=${EXPERIMENT:-Experiments/bench/federated_10k.json}
FLOWER_PYTHON=${FLOWER_PYTHON:-/work/venv-flower/bin/python}
CLIENTS=${CLIENTS:-10000}
ROUNDS=${ROUNDS:-100}
FLOWER_ROUNDS=${FLOWER_ROUNDS:-5}
FLOWER_ENGINES=${FLOWER_ENGINES:-flower}
TORCH_ROUNDS=${TORCH_ROUNDS:-$ROUNDS}
OUT_JSON=${1:-results/federated_vs_flower.json}
BENCH=Experiments/bench/flower_federated.py

die() { echo "federated_vs_flower: $*" >&2; exit 1; }

if [[ "${SKIP_CK:-0}" != 1 ]]; then
  [[ -f "$EXPERIMENT" ]] || die "missing $EXPERIMENT: the ContinualKit side of this \
benchmark (issue 16's federated workload) is not there; build it or set EXPERIMENT= \
(SKIP_CK=1 runs only the Python engines)"
  [[ -x "$CONTINUAL" ]] || die "no ContinualKit CLI at $CONTINUAL: run \
'swift build -c release' or set CONTINUAL="
fi
[[ -x "$FLOWER_PYTHON" ]] || die "no Python at $FLOWER_PYTHON (FLOWER_PYTHON): \
python3 -m venv /work/venv-flower && /work/venv-flower/bin/pip install \
'flwr[simulation]' torch"
"$FLOWER_PYTHON" -c 'import torch' 2>/dev/null \
  || die "$FLOWER_PYTHON cannot import torch: pip install torch"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fedvsflower.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "federated_vs_flower: $CLIENTS clients, $ROUNDS rounds, $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); work files in $TMP" >&2

# (a) ContinualKit
if [[ "${SKIP_CK:-0}" != 1 ]]; then
  echo "== ContinualKit: $CONTINUAL run $EXPERIMENT" >&2
  ck_rc=0
  /usr/bin/time -v -o "$TMP/ck.time" "$CONTINUAL" run "$EXPERIMENT" \
    --output "$TMP/ck.h5" --overwrite > "$TMP/ck.log" 2>&1 || ck_rc=$?
  tail -n 5 "$TMP/ck.log" >&2
  [[ $ck_rc == 0 ]] || echo "ContinualKit run failed (exit $ck_rc), see above" >&2
  echo "$ck_rc" > "$TMP/ck.rc"
fi

# (b) plain PyTorch loop, (c) Flower
echo "== torch-loop ($TORCH_ROUNDS rounds)" >&2
"$FLOWER_PYTHON" "$BENCH" --engine torch-loop --clients "$CLIENTS" \
  --rounds "$TORCH_ROUNDS" --out "$TMP/torch-loop.json" >&2 \
  || echo "torch-loop failed: see its JSON" >&2
for engine in $FLOWER_ENGINES; do
  echo "== $engine ($FLOWER_ROUNDS of $ROUNDS rounds)" >&2
  if "$FLOWER_PYTHON" -c 'import flwr, ray' 2> "$TMP/$engine.import"; then
    "$FLOWER_PYTHON" "$BENCH" --engine "$engine" --clients "$CLIENTS" \
      --rounds "$FLOWER_ROUNDS" --out "$TMP/$engine.json" > "$TMP/$engine.log" 2>&1 \
      || { echo "$engine failed; last lines of its log:" >&2; tail -n 15 "$TMP/$engine.log" >&2; }
  else
    echo "$engine: Flower cannot be imported: $(tail -n 1 "$TMP/$engine.import")" >&2
    printf '{"engine": "%s", "status": "failed: %s"}\n' "$engine" \
      "$(tail -n 1 "$TMP/$engine.import" | tr -d '"\\')" > "$TMP/$engine.json"
  fi
done

# Table + JSON
"$FLOWER_PYTHON" - "$TMP" "$OUT_JSON" "$CLIENTS" "$ROUNDS" "$FLOWER_ENGINES" \
  "${SKIP_CK:-0}" <<'PY'
import json, os, re, sys
tmp, out, clients, rounds, engines, skip_ck = sys.argv[1:]
clients, rounds = int(clients), int(rounds)
per_round = max(1, clients // 10)
full_updates = rounds * per_round
cores = len(os.sched_getaffinity(0))
rows = []

if skip_ck != "1":
    t = open(os.path.join(tmp, "ck.time")).read()
    def field(name):
        m = re.search(re.escape(name) + r": (.+)", t)
        return m.group(1).strip() if m else None
    el = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    secs = 0.0
    for part in el.split(":"):
        secs = secs * 60 + float(part)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rc = open(os.path.join(tmp, "ck.rc")).read().strip()
    rows.append({"engine": "ContinualKit", "status": "ok" if rc == "0" else f"failed: exit {rc}",
                 "wall_s": secs, "measured_rounds": rounds, "extrapolated": False,
                 "updates_per_s": full_updates / secs, "cpu_s": cpu,
                 "samples_per_s_core": full_updates * 120 / secs / cores,
                 "peak_rss_mb": int(field("Maximum resident set size (kbytes)")) / 1024,
                 "note": "end to end (process start, data, training, HDF5)"})

for name in ["torch-loop"] + engines.split():
    path = os.path.join(tmp, f"{name}.json")
    if not os.path.exists(path):
        rows.append({"engine": name, "status": "failed: no report"}); continue
    r = json.load(open(path))
    row = {"engine": name, "status": r.get("status"), "report": r}
    if r.get("rounds_done"):
        done = r["rounds_done"]
        ups = r["client_updates_per_s"]
        extrap = done < rounds
        if extrap:  # steady rounds (first round includes Ray/actor warm-up)
            wall = r["steady_round_seconds"] * rounds + (
                r["wall_seconds"] - r["rounds_wall_seconds"]) + (
                r["round_seconds"][0] - r["steady_round_seconds"])
            ups = per_round / r["steady_round_seconds"]
        else:
            wall = r["wall_seconds"]
        used = 1 if name == "torch-loop" else cores
        row.update({"wall_s": wall, "measured_rounds": done, "extrapolated": extrap,
                    "updates_per_s": ups,
                    "samples_per_s_core": ups * r["samples_per_client"] / used,
                    "cpu_s": r.get("cpu_seconds_tree"),
                    "peak_rss_mb": r["peak_pss_tree_bytes"] / 2**20,
                    "note": ("PSS of the process tree; " +
                             ("wall = start-up + steady rounds x %d (extrapolated)" % rounds
                              if extrap else "measured") +
                             ("; 1 core" if used == 1 else ""))})
    rows.append(row)

ck = next((r for r in rows if r["engine"] == "ContinualKit" and "wall_s" in r), None)
for r in rows:
    if ck and "wall_s" in r:
        r["ratio_vs_ck"] = r["wall_s"] / ck["wall_s"]

print()
print(f"{clients} clients x {rounds} rounds, {per_round}/round, 1 epoch of 120 samples;"
      f" {cores} cores")
hdr = f"{'engine':<13}{'wall s':>10} {'upd/s':>9} {'samp/s/core':>12} {'x CK':>8} {'peak MB':>8}"
print(hdr); print("-" * len(hdr))
for r in rows:
    if "wall_s" not in r:
        print(f"{r['engine']:<13} {r['status'][:60]}"); continue
    star = "*" if r["extrapolated"] else " "
    ratio = f"{r['ratio_vs_ck']:.1f}" if "ratio_vs_ck" in r else "-"
    print(f"{r['engine']:<13}{r['wall_s']:>9.1f}{star} {r['updates_per_s']:>9.0f}"
          f" {r['samples_per_s_core']:>12.0f} {ratio:>8} {r['peak_rss_mb']:>8.0f}")
if any(r.get("extrapolated") for r in rows):
    print("* extrapolated: measured start-up + first round + steady per-round time")
    print("  x the remaining rounds (see measured_rounds in the JSON)")
print("x CK = wall time / ContinualKit's; samp/s/core: torch-loop uses 1 core,")
print("the others all cores; peak MB: RSS (ContinualKit), PSS of process tree (Python)")
for r in rows:
    if r.get("status") not in (None, "ok"):
        print(f"{r['engine']}: {r['status']}")
with open(out, "w") as f:
    json.dump({"clients": clients, "rounds": rounds, "clients_per_round": per_round,
               "cores": cores, "load_avg": os.getloadavg(), "rows": rows}, f, indent=2)
print(f"wrote {out}")
PY
