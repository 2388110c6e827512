"""`continual export --format tflite` checked with Google's LiteRT interpreter (issue 33, item 1).

The experiment and the model kinds are the ONNX test's (`test_model_export.EXPERIMENT`,
`ONNX_CASES`: plain, adapters, LoRA on two routes, last layer, BitFit, multi-head on two routes,
multiclass, int8 per channel and per tensor, core-only graphs, HAT, SLDA, pruned models), so every
model kind the ONNX exporter supports is exported to LiteRT too. Each model is run by
`ai_edge_litert`'s interpreter — with its default XNNPACK delegate, as an app would, and with the
builtin reference kernels — through the `serving_default` signature, and its logits and
probabilities must equal the toolkit's own outputs (`--reference`: the toolkit's forward pass with
LoRA unmerged and adapters as trained, or its int8 model) within 1e-5 on every test sample, with
the same predicted class.

The binary: $CONTINUAL_BIN, else `continual` on PATH, else .build/release or .build/debug.
"""
from __future__ import annotations

import json
import subprocess

import h5py
import numpy as np
import pytest

litert = pytest.importorskip("ai_edge_litert.interpreter")
from test_model_export import ONNX_CASES, TOLERANCE, final_parameters, plain_layers, run_experiment  # noqa: E402

CASES = ONNX_CASES
PREDICTED: dict[str, set] = {}       # classes predicted per case (filled by the matching test)
RESOLVERS = {"xnnpack": litert.OpResolverType.AUTO, "builtin": litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    binary, results, d = run_experiment(tmp_path_factory, "litert", "LiteRT export tests")
    paths = {"_bin": binary, "_results": results, "_dir": d}
    for name, run, extra in CASES:
        out, ref = d / f"{name}.tflite", d / f"{name}.ref.json"
        args = [binary, "export", results, "--run", run, "--format", "tflite", "-o", str(out), "--reference", str(ref)] + extra
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"{' '.join(args)}: {p.stderr}"
        assert "tflite" in p.stdout
        paths[name] = (str(out), str(ref))
    return paths


def interpreter(path, resolver="xnnpack"):
    return litert.Interpreter(model_path=path, experimental_op_resolver_type=RESOLVERS[resolver])


def ops(interp):
    return [o["op_name"] for o in interp._get_ops_details()]


@pytest.mark.parametrize("resolver", sorted(RESOLVERS))
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_litert_matches_the_toolkit(exported, name, resolver):
    path, ref_path = exported[name]
    interp = interpreter(path, resolver)
    assert interp.get_signature_list() == {
        "serving_default": {"inputs": ["features"],
                            "outputs": ["embedding"] if name.endswith("_core") else ["logits", "probabilities"]}}
    run = interp.get_signature_runner("serving_default")
    ref = json.load(open(ref_path))
    n = 0
    worst_logit = worst_probability = 0.0
    if name.endswith("_core"):           # --parts core: the last hidden activations only
        for e in ref["experiences"]:
            X = np.asarray(e["features"], dtype=np.float32)
            out = run(features=X)
            assert out["embedding"].shape == np.asarray(e["embedding"]).shape
            worst_logit = max(worst_logit, float(np.abs(out["embedding"] - np.asarray(e["embedding"])).max()))
            n += len(X)
        print(f"litert {name} ({resolver}): {n} test samples, max |Δembedding| {worst_logit:.3g}")
        assert n >= 200 and worst_logit <= TOLERANCE
        return
    predicted, spread = set(), 0.0
    for e in ref["experiences"]:
        X = np.asarray(e["features"], dtype=np.float32)
        out = run(features=X)
        logits, probabilities = out["logits"], out["probabilities"]
        ref_logits, ref_p = np.asarray(e["logits"]), np.asarray(e["probabilities"])
        assert logits.shape == ref_logits.shape and probabilities.shape == ref_p.shape
        worst_logit = max(worst_logit, float(np.abs(logits - ref_logits).max()))
        worst_probability = max(worst_probability, float(np.abs(probabilities - ref_p).max()))
        assert np.allclose(probabilities.sum(1), 1, atol=1e-6)
        # The same decision on every sample (a tie within 1e-6 would be the only excuse; none occurs).
        assert np.array_equal(probabilities.argmax(1), ref_p.argmax(1)), f"{name}: argmax differs"
        predicted |= set(probabilities.argmax(1).tolist())
        spread = max(spread, float(np.ptp(ref_logits, axis=0).max()))
        n += len(X)
    print(f"litert {name} ({resolver}): {n} test samples, max |Δlogit| {worst_logit:.3g}, max |Δp| {worst_probability:.3g}")
    assert n >= 200, n                   # 3 test sets of 80 samples
    PREDICTED[name] = (predicted, spread)
    assert worst_logit <= TOLERANCE, f"{name}: logits differ by {worst_logit}"
    assert worst_probability <= TOLERANCE, f"{name}: probabilities differ by {worst_probability}"


def test_the_cases_are_not_constant_models(exported):
    """The agreement above is not that of constant outputs: over the cases, most models' logits
    vary across the test samples and most binary models predict both classes. (Single models
    may be near-constant as trained — HAT's masks leave this small run's logits constant, BitFit
    predicts one class — and are exported as they are.)"""
    if not PREDICTED:
        pytest.skip("runs after test_litert_matches_the_toolkit (same module)")
    varying = [n for n, (_, spread) in PREDICTED.items() if spread > 0.05]
    assert len(varying) >= 0.75 * len(PREDICTED), PREDICTED
    binary = [p for n, (p, _) in PREDICTED.items() if not n.startswith("apps")]
    assert sum(len(p) == 2 for p in binary) >= len(binary) // 2, PREDICTED


def test_graph_uses_builtin_ops_and_int8_weights(exported):
    allowed = {"FULLY_CONNECTED", "ADD", "SUB", "RELU", "TANH", "LOGISTIC", "SOFTMAX", "CONCATENATION", "DEQUANTIZE"}
    for name, _, _ in CASES:
        interp = interpreter(exported[name][0], "builtin")
        used = ops(interp)
        assert set(used) <= allowed, (name, used)
        tensors = {t["name"]: t for t in interp.get_tensor_details()}
        if "int8" in name:
            q = [t for t in tensors.values() if t["dtype"] == np.int8]
            dense = sum(1 for t in tensors if t.endswith(".bias") and t.startswith("dense"))
            assert len(q) == dense and used.count("DEQUANTIZE") == dense, name
            for t in q:
                scales = t["quantization_parameters"]["scales"]
                per_tensor = name == "plain_tensor_int8"
                assert (len(scales) == 1) == (per_tensor or t["shape"][0] == 1), (name, t["name"], len(scales))
                assert not t["quantization_parameters"]["zero_points"].any()
        else:
            assert "DEQUANTIZE" not in used and not any(t["dtype"] == np.int8 for t in tensors.values())
        # One FC per dense layer and two per adapter, whose residual is the only ADD.
        dense = sum(1 for t in tensors if t.startswith("dense") and t.endswith(".bias"))
        assert used.count("FULLY_CONNECTED") == dense + 2 * used.count("ADD"), (name, used)
        assert ("ADD" in used) == ("adapters" in name), (name, used)


def test_float_weights_are_the_runs_final_parameters(exported):
    """FULLY_CONNECTED stores W as [out × in]: the transpose of the toolkit's [in × out]."""
    for name in ("plain", "last_layer", "bitfit"):
        flat, sizes = final_parameters(exported["_results"], name)
        interp = interpreter(exported[name][0], "builtin")
        interp.allocate_tensors()
        by_name = {t["name"]: t["index"] for t in interp.get_tensor_details()}
        for i, (W, b) in enumerate(plain_layers(flat, sizes)):
            assert np.array_equal(interp.get_tensor(by_name[f"dense{i}.weight"]), W.T)
            assert np.array_equal(interp.get_tensor(by_name[f"dense{i}.bias"]), b)


def test_int8_weights_are_the_toolkits_quantised_values(exported):
    """q·scale of the stored int8 weights reproduces the float weights within half a step."""
    flat, sizes = final_parameters(exported["_results"], "plain")
    interp = interpreter(exported["plain_int8"][0], "builtin")
    interp.allocate_tensors()
    details = {t["name"]: t for t in interp.get_tensor_details()}
    for i, (W, _) in enumerate(plain_layers(flat, sizes)):
        t = details[f"dense{i}.weight_int8"]
        q = interp.get_tensor(t["index"]).astype(np.float64)
        s = t["quantization_parameters"]["scales"].astype(np.float64)
        assert q.shape == W.T.shape and np.abs(q).max() == 127
        assert np.abs(q * s[:, None] - W.T).max() <= 0.5 * s.max() + 1e-7


def test_lora_routes_differ(exported):
    a, b = interpreter(exported["lora"][0]), interpreter(exported["lora_route0"][0])
    X = np.asarray(json.load(open(exported["lora"][1]))["experiences"][0]["features"], dtype=np.float32)
    la = a.get_signature_runner("serving_default")(features=X)["logits"]
    lb = b.get_signature_runner("serving_default")(features=X)["logits"]
    assert np.abs(la - lb).max() > 1e-3


def test_tflite_export_refuses_what_onnx_refuses(exported):
    b, results = exported["_bin"], exported["_results"]

    def fails(args, says):
        p = subprocess.run([b, "export", results, "--format", "tflite", "-o", str(exported["_dir"] / "x.tflite")] + args,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and says in p.stderr, (args, p.returncode, p.stderr)
        assert not (exported["_dir"] / "x.tflite").exists()

    fails(["--run", "lora", "--int8"], "LoRA")
    fails(["--run", "adapters", "--int8"], "adapters")
    fails(["--run", "icarl"], "nearest mean of its exemplars")
    fails(["--run", "entropy"], "routes each sample by entropy")
    fails(["--run", "hat", "--parts", "core"], "task gates")
    fails(["--run", "plain", "--route", "7"], "route 7 is out of range")


# --- Training signature (issue 33): one SGD step of the output layer, checked against the trainer.
#
# A CSV scenario the test writes (so the test holds the exact training samples): experience 0
# trains the whole network, then `last_layer` freezes the core and experience 1 trains only the
# output layer with plain SGD, one epoch, one batch holding every sample = one step on the batch's
# mean loss. The model after experience 0 (a checkpoint) is exported with `--updatable`; its `train`
# signature, run by the interpreter on experience 1's samples, must give the output layer the run
# ends with (final_parameters) — the same trainer `PersonalModel` drives.

def _write_csv(path, rng, classes, n0=160, n1=48, n_test=30, d=4):
    w = rng.normal(size=(d, classes))
    rows = ["experience,split,label," + ",".join(f"f{j}" for j in range(d))]
    data = {}
    for e, n in ((0, n0), (1, n1)):
        for split, m in (("train", n), ("test", n_test)):
            X = rng.normal(size=(m, d)).astype(np.float32)
            y = (X @ w + 0.3 * rng.normal(size=(m, classes))).argmax(1) if classes > 2 else (X @ w[:, 0] > 0).astype(int)
            data[(e, split)] = (X, y)
            rows += [f"{e},{split},{int(c)}," + ",".join(repr(float(v)) for v in x) for x, c in zip(X, y)]
    path.write_text("\n".join(rows) + "\n")
    return data


ACTIVATIONS = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v))}


@pytest.mark.parametrize("strategy,classes,activation,optimizer", [
    ("last_layer", 2, "tanh", "sgd"), ("last_layer", 3, "tanh", "sgd"),
    ("bitfit", 2, "relu", "sgd"), ("bitfit", 3, "tanh", "sgd"), ("bitfit", 3, "sigmoid", "sgd"),
    ("last_layer", 3, "tanh", "adam"), ("bitfit", 2, "relu", "adam")])
def test_train_signature_takes_the_trainers_steps(exported, tmp_path, strategy, classes, activation, optimizer):
    """SGD: one step (one epoch of one batch). Adam: two epochs of one batch = two steps from a
    fresh optimizer (m, v = 0, t = 1, 2), so the test also checks the state carried between calls."""
    b = exported["_bin"]
    rng = np.random.default_rng(11 + classes)
    data = _write_csv(tmp_path / "data.csv", rng, classes)
    steps = 2 if optimizer == "adam" else 1
    exp = {"name": "litert_train", "seed": 4, "scenario": {"type": "dataset", "path": str(tmp_path / "data.csv")},
           "model": {"hidden": [8, 6], "activation": activation},
           "optimizer": {"type": "sgd", "lr": 0.5} if optimizer == "sgd" else {"type": "adam", "lr": 0.01},
           "training": {"epochs": steps, "batch_size": 1024, "shuffle": False},
           "variants": [{"name": strategy, "strategy": [{"type": strategy, "freeze_core_after": 0}]}]}
    (tmp_path / "e.json").write_text(json.dumps(exp))

    def cli(*args):
        p = subprocess.run([b, *args], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{args}: {p.stderr[-2000:]}"
        return p.stdout

    cli("run", str(tmp_path / "e.json"), "-o", str(tmp_path / "r.h5"), "-q", "--plain")
    cli("run", str(tmp_path / "e.json"), "-o", str(tmp_path / "r0.h5"), "-q", "--plain", "--stop-after", "0",
        "--checkpoint", str(tmp_path / "ck.h5"))
    out = cli("export", "--checkpoint", str(tmp_path / "ck.h5"), "--format", "tflite", "--updatable",
              "-o", str(tmp_path / "m.tflite"))
    assert "train" in out

    flat, sizes = final_parameters(str(tmp_path / "r.h5"), strategy)
    layers = plain_layers(flat, sizes)
    W_end, b_end = layers[-1]
    interp = interpreter(str(tmp_path / "m.tflite"), "builtin")
    sigs = interp.get_signature_list()
    assert set(sigs) == {"serving_default", "train", "parameters", "restore"} | ({"begin_session"} if optimizer == "adam" else set())
    # What the run ends with, for each trained variable.
    if strategy == "last_layer":
        expected = {"weight": W_end.T, "bias": b_end}
    else:
        expected = {f"dense{i}.bias": bb for i, (_, bb) in enumerate(layers)}
    assert sorted(sigs["parameters"]["outputs"]) == sorted(expected)
    before = interp.get_signature_runner("parameters")()
    X1, y1 = data[(1, "train")]
    k = sizes[-1]
    targets = (y1[:, None] == np.arange(k)[None, :]) if k > 1 else y1[:, None]
    train = interp.get_signature_runner("train")
    if optimizer == "adam":
        interp.get_signature_runner("begin_session")()     # a no-op on a fresh interpreter
    loss = train(features=X1, targets=targets.astype(np.float32))["loss"]
    for _ in range(steps - 1):
        train(features=X1, targets=targets.astype(np.float32))
    after = interp.get_signature_runner("parameters")()
    # The step moved the parameters, and to where the trainer moved them.
    step = max(float(np.abs(after[n] - before[n]).max()) for n in expected)
    worst = {n: float(np.abs(after[n] - v).max()) for n, v in expected.items()}
    print(f"litert train {strategy} ({k} logits, {activation}): {steps} {optimizer} step(s) on {len(X1)} samples moved the "
          f"parameters by up to {step:.3g}; max difference from the trainer {max(worst.values()):.3g}; "
          f"loss before the step {float(loss):.4f}")
    assert step > 1e-3
    assert max(worst.values()) <= 1e-6, worst
    # `loss` is the batch's mean cross-entropy before the step: the run's loss for experience 1
    # (one epoch of one batch).
    with h5py.File(str(tmp_path / "r.h5"), "r") as f:
        run = next(g for g in f["runs"].values() if g.attrs["name"] == strategy)
        assert abs(float(loss) - float(run["loss_curve"][1, 0])) <= 1e-5, (float(loss), run["loss_curve"][:])
    # Inference now reads the trained variables: it equals a numpy forward pass with the run's
    # final parameters (whose frozen part the run left as exported).
    served = interp.get_signature_runner("serving_default")(features=X1)
    h = X1.astype(np.float64)
    for W, bb in layers[:-1]:
        h = ACTIVATIONS[activation](h @ W + bb)
    z = h @ W_end + b_end
    assert np.abs(served["logits"] - z).max() <= 1e-5
    # restore: writing the parameters back reproduces them (what an app does after a relaunch).
    fresh = interpreter(str(tmp_path / "m.tflite"), "builtin")
    fresh.get_signature_runner("restore")(**after)
    again = fresh.get_signature_runner("parameters")()
    assert all(np.array_equal(again[n], after[n]) for n in expected)


def test_train_signature_is_refused_where_it_cannot_apply(exported):
    b, results = exported["_bin"], exported["_results"]

    def fails(args, says):
        p = subprocess.run([b, "export", results, "--format", "tflite", "--updatable", "-o", str(exported["_dir"] / "y.tflite")] + args,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and says in p.stderr, (args, p.returncode, p.stderr)

    fails(["--run", "plain"], "last_layer and (single-head) bitfit runs")
    fails(["--run", "last_layer"], "plain SGD")             # the experiment's SGD has momentum 0.9
    fails(["--run", "bitfit"], "plain SGD")                 # (and Adam without weight decay)
    fails(["--run", "last_layer", "--int8"], "int8")
    fails(["--run", "last_layer", "--parts", "core"], "core-only")
