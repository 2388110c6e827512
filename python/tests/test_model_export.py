"""`continual export` checked with the maintained runtimes (issue 17, item 4).

A small experiment is trained with the real CLI (plain, adapter, LoRA, last-layer, BitFit,
multi-head and a multiclass run; int8 per channel and per tensor; pruned and low-rank models), each model is exported to ONNX and Core ML, and:
- ONNX: `onnx.checker` (full check) accepts it and ONNX Runtime's logits and probabilities match
  the toolkit's own outputs (`continual export --reference`, the toolkit's forward pass with LoRA
  unmerged and adapters as trained, or its int8 model) within 1e-5 on every test set;
- Core ML: coremltools parses and loads the spec (Linux cannot compile or predict), it passes the
  checks Core ML's validator makes of updatable networks, its weights equal the run's
  final_parameters exactly, and its layers computed in numpy give the toolkit's probabilities.

The binary: $CONTINUAL_BIN, else `continual` on PATH, else .build/release or .build/debug.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
Model_pb2 = pytest.importorskip("coremltools.proto.Model_pb2")
ct = pytest.importorskip("coremltools")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 1e-5

EXPERIMENT = {
    "name": "export_check",
    "seed": 3,
    "scenario": {"type": "habit_drift", "train_per_experience": 300, "test_per_experience": 80,
                 "phases": ["morning", "night", "weekend_only"]},
    "model": {"hidden": [8, 6], "activation": "tanh"},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "training": {"epochs": 3, "batch_size": 32},
    "variants": [
        {"name": "plain", "strategy": ["naive"]},
        {"name": "plain_tensor", "strategy": ["naive"], "quantization": {"granularity": "per_tensor"},
         "model": {"activation": "relu"}},
        {"name": "adapters", "allow_task_labels": True, "strategy": [
            {"type": "adapters", "layers": "all", "bottleneck": 3, "activation": "relu", "freeze_core_after": 0,
             "routing": "task_id"}]},
        {"name": "lora", "allow_task_labels": True, "strategy": [
            {"type": "lora", "layers": "all", "rank": 2, "alpha": 2, "freeze_core_after": 0, "routing": "task_id"}]},
        {"name": "last_layer", "strategy": [{"type": "last_layer", "freeze_core_after": 0}]},
        {"name": "bitfit", "strategy": [{"type": "bitfit", "freeze_core_after": 0}]},
        {"name": "multihead", "model": {"multi_head": True}, "allow_task_labels": True, "strategy": ["naive"]},
        {"name": "apps", "scenario": {"type": "app_usage", "train_per_experience": 300, "test_per_experience": 80},
         "model": {"activation": "sigmoid"}, "strategy": ["naive"]},
        # Predictions from an override: HAT's task masks are folded into the weights; iCaRL's
        # nearest mean and entropy routing have no exported form and are refused.
        # c = 0.05 (HAT's attention regulariser, default 0.75): at the default this 8-6 network
        # closes every gate of routes 1 and 2, and folding all-zero masks tests nothing (issue 40).
        {"name": "hat", "model": {"multi_head": True}, "allow_task_labels": True,
         "strategy": [{"type": "hat", "s_max": 50, "c": 0.05}]},
        {"name": "icarl", "scenario": {"type": "app_usage", "train_per_experience": 300, "test_per_experience": 80},
         "strategy": [{"type": "icarl", "capacity": 40}]},
        {"name": "entropy", "strategy": [{"type": "adapters", "bottleneck": 2, "routing": "entropy"}]},
        {"name": "slda", "strategy": [{"type": "slda"}]},
        # Issue 31: pruned models export with their exact zeros (80 % of every dense weight
        # matrix; half the hidden units of each hidden layer, progressively over two experiences).
        {"name": "pruned_magnitude", "strategy": [{"type": "pruning", "sparsity": 0.8, "start_experience": 1}]},
        {"name": "pruned_structured", "strategy": [{"type": "pruning", "method": "structured", "sparsity": 0.5,
                                                     "schedule": "progressive", "rounds": 2, "start_experience": 1}]},
        {"name": "pruned_magnitude_50", "strategy": [{"type": "pruning", "sparsity": 0.5, "start_experience": 1}]},
        # Low-rank: both hidden layers (10×8, 8×6) factorised at rank 2 before experience 1,
        # the factors fine-tuned on experiences 1 and 2; exported as (x·U)·V + b.
        {"name": "low_rank", "strategy": [{"type": "low_rank", "rank": 2, "start_experience": 1}]},
    ],
}

# (exported name, run, extra export arguments)
ONNX_CASES = [
    ("plain", "plain", []), ("adapters", "adapters", []), ("lora", "lora", []),
    ("lora_route0", "lora", ["--route", "0"]), ("last_layer", "last_layer", []), ("bitfit", "bitfit", []),
    ("multihead", "multihead", []), ("multihead_route0", "multihead", ["--route", "0"]),
    ("apps", "apps", []), ("plain_int8", "plain", ["--int8"]), ("plain_tensor_int8", "plain_tensor", ["--int8"]),
    ("apps_int8", "apps", ["--int8"]),
    ("plain_core", "plain", ["--parts", "core"]), ("adapters_core", "adapters", ["--parts", "core"]),
    ("apps_int8_core", "apps", ["--parts", "core", "--int8"]),
    ("hat", "hat", []), ("hat_route0", "hat", ["--route", "0"]), ("hat_route1", "hat", ["--route", "1"]), ("slda", "slda", []),
    ("pruned_magnitude", "pruned_magnitude", []), ("pruned_structured", "pruned_structured", []),
    ("pruned_magnitude_50", "pruned_magnitude_50", []), ("low_rank", "low_rank", []),
]
COREML_CASES = [
    ("plain", "plain", [], None), ("adapters", "adapters", [], None), ("lora", "lora", [], None),
    ("last_layer", "last_layer", [], ["dense2"]), ("bitfit", "bitfit", [], ["dense0", "dense1", "dense2"]),
    ("multihead_route1", "multihead", ["--route", "1"], None),
    ("apps", "apps", [], None), ("plain_int8", "plain", ["--int8"], None), ("apps_int8", "apps", ["--int8"], None),
    ("plain_core", "plain", ["--parts", "core"], None), ("adapters_core", "adapters", ["--parts", "core"], None),
    ("low_rank", "low_rank", [], None),
]


def find_binary():
    env = os.environ.get("CONTINUAL_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in (shutil.which("continual"), os.path.join(REPO, ".build/release/continual"),
              os.path.join(REPO, ".build/debug/continual")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def run_experiment(tmp_path_factory, name, skipped_what):
    """Runs EXPERIMENT with the CLI into a fresh directory: (binary, results path, directory).
    Shared by this file's and test_litert_export.py's fixtures (skips without a binary)."""
    binary = find_binary()
    if binary is None:
        pytest.skip(f"no `continual` binary (set CONTINUAL_BIN or swift build): {skipped_what} skipped")
    d = tmp_path_factory.mktemp(name)
    exp = d / "export_check.json"
    exp.write_text(json.dumps(EXPERIMENT))
    results = str(d / "r.h5")
    r = subprocess.run([binary, "run", str(exp), "-o", results, "--overwrite", "-q", "--plain"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return binary, results, d


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    binary, results, d = run_experiment(tmp_path_factory, "export", "export tests")

    def export(run, fmt, out, extra, reference=None):
        args = [binary, "export", results, "--run", run, "--format", fmt, "-o", str(out)] + extra
        if reference:
            args += ["--reference", str(reference)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"{' '.join(args)}: {p.stderr}"

    paths = {"_bin": binary, "_results": results}
    for name, run, extra in ONNX_CASES:
        export(run, "onnx", d / f"{name}.onnx", extra, d / f"{name}.ref.json")
        paths[("onnx", name)] = (str(d / f"{name}.onnx"), str(d / f"{name}.ref.json"))
    for name, run, extra, _ in COREML_CASES:
        export(run, "coreml", d / f"{name}.mlmodel", extra, d / f"{name}.coreml.ref.json")
        paths[("coreml", name)] = (str(d / f"{name}.mlmodel"), str(d / f"{name}.coreml.ref.json"))
    return paths


def final_parameters(results, run):
    with h5py.File(results, "r") as f:
        for rid, g in f["runs"].items():
            if g.attrs["name"] == run:
                return g["final_parameters"][:], [int(x) for x in g["final_parameters"].attrs["layer_sizes"]]
    raise KeyError(run)


def plain_layers(flat, sizes):
    """(W [in×out], b) per dense layer of the plain network's flat vector (single head)."""
    out, o = [], 0
    for a, b in zip(sizes[:-1], sizes[1:]):
        W = flat[o:o + a * b].reshape(a, b)
        o += a * b
        out.append((W, flat[o:o + b]))
        o += b
    return out


@pytest.mark.parametrize("name", [c[0] for c in ONNX_CASES])
def test_onnxruntime_matches_the_toolkit(exported, name):
    path, ref_path = exported[("onnx", name)]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = json.load(open(ref_path))
    worst_logit = worst_probability = 0.0
    n = 0
    if name.endswith("_core"):           # --parts core: the last hidden activations only
        assert [o.name for o in model.graph.output] == ["embedding"]
        for e in ref["experiences"]:
            X = np.asarray(e["features"], dtype=np.float32)
            (embedding,) = session.run(["embedding"], {"features": X})
            worst_logit = max(worst_logit, float(np.abs(embedding - np.asarray(e["embedding"])).max()))
            n += len(X)
        print(f"{name}: {n} test samples, max |Δembedding| {worst_logit:.3g}")
        assert n > 0 and worst_logit <= TOLERANCE
        return
    for e in ref["experiences"]:
        X = np.asarray(e["features"], dtype=np.float32)
        logits, probabilities = session.run(["logits", "probabilities"], {"features": X})
        worst_logit = max(worst_logit, float(np.abs(logits - np.asarray(e["logits"])).max()))
        worst_probability = max(worst_probability, float(np.abs(probabilities - np.asarray(e["probabilities"])).max()))
        assert np.allclose(probabilities.sum(1), 1, atol=1e-6)
        n += len(X)
    print(f"{name}: {n} test samples, max |Δlogit| {worst_logit:.3g}, max |Δp| {worst_probability:.3g}")
    assert n > 0
    assert worst_logit <= TOLERANCE, f"{name}: logits differ by {worst_logit}"
    assert worst_probability <= TOLERANCE, f"{name}: probabilities differ by {worst_probability}"
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["continualkit.layer_sizes"].startswith("10,8,6") or name.startswith("apps")
    assert ("int8" in meta["continualkit.precision"]) == ("int8" in name)
    if name == "plain_tensor_int8":      # the run's quantization.granularity decides
        assert meta["continualkit.precision"] == "int8 (per_tensor)"
        scales = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer if t.name.endswith("scale")}
        assert all(s.ndim == 0 for s in scales.values()) and len(scales) == 3
    if "int8" in name:
        assert any(t.data_type == onnx.TensorProto.INT8 for t in model.graph.initializer)
        assert not any(t.name.endswith(".weight") for t in model.graph.initializer)


HAT_ROUTES = ["hat_route0", "hat_route1", "hat"]     # "hat" exports the last route (2)


def test_hat_routes_keep_open_units_so_the_fold_is_tested(exported):
    """Every exported HAT route has units whose gates stay open: its reference logits (the run's
    own network through its gates) vary over the test samples, so a fold that zeroed or mis-scaled
    a mask would show in test_onnxruntime_matches_the_toolkit."""
    for name in HAT_ROUTES:
        ref = json.load(open(exported[("onnx", name)][1]))
        logits = np.concatenate([np.asarray(e["logits"]) for e in ref["experiences"]])
        assert float(logits.std(axis=0).max()) > 1e-3, f"{name}: every gate closed, the logits are constant"


def test_a_wrongly_folded_hat_mask_is_caught(exported):
    """Fold one hidden unit's gate wrongly (its weights left unmasked where the gate is below 1, or
    zeroed where it is open) in each route's graph: onnxruntime then differs from the reference by
    far more than the tolerance — the comparison above can fail."""
    for name in HAT_ROUTES:
        path, ref_path = exported[("onnx", name)]
        model = onnx.load(path)
        ref = json.load(open(ref_path))
        weights = [t for t in model.graph.initializer if onnx.numpy_helper.to_array(t).ndim == 2]
        first = weights[0]
        W = onnx.numpy_helper.to_array(first).copy()
        column = int(np.argmax(np.abs(W).sum(axis=0)))     # the most used (open) unit of the first layer
        W[:, column] = 0.0                                  # as if its gate were folded as 0
        first.CopyFrom(onnx.numpy_helper.from_array(W, first.name))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        worst = 0.0
        for e in ref["experiences"]:
            (logits,) = session.run(["logits"], {"features": np.asarray(e["features"], dtype=np.float32)})
            worst = max(worst, float(np.abs(logits - np.asarray(e["logits"])).max()))
        assert worst > 100 * TOLERANCE, f"{name}: a wrong mask changed the logits by only {worst}"


def test_float_onnx_weights_are_the_runs_final_parameters(exported):
    for name in ("plain", "last_layer", "bitfit"):
        flat, sizes = final_parameters(exported["_results"], name)
        model = onnx.load(exported[("onnx", name)][0])
        init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        for i, (W, b) in enumerate(plain_layers(flat, sizes)):
            assert np.array_equal(init[f"dense{i}.weight"], W) and np.array_equal(init[f"dense{i}.bias"], b)


def test_pruned_models_export_their_exact_zeros(exported):
    # Magnitude: ⌊0.8·count⌋ zeros in every dense weight matrix (layer-wise pruning).
    model = onnx.load(exported[("onnx", "pruned_magnitude")][0])
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for i in range(3):
        W = init[f"dense{i}.weight"]
        assert int((W == 0).sum()) >= int(0.8 * W.size), f"dense{i}: {(W == 0).sum()} zeros of {W.size}"
    # Structured: half the units of each hidden layer (8 → 4, 6 → 3) have zero incoming weights,
    # bias and outgoing weights.
    model = onnx.load(exported[("onnx", "pruned_structured")][0])
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for i, removed in ((0, 4), (1, 3)):
        W, b, W_next = init[f"dense{i}.weight"], init[f"dense{i}.bias"], init[f"dense{i + 1}.weight"]
        dead = [j for j in range(W.shape[1]) if not W[:, j].any() and b[j] == 0 and not W_next[j, :].any()]
        assert len(dead) == removed, f"dense{i}: units {dead}"


def test_low_rank_layers_export_as_two_matmuls_of_their_factors(exported):
    model = onnx.load(exported[("onnx", "low_rank")][0])
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    # The factorised hidden layers hold U [in, 2] and V [2, out] and no dense weight; the
    # output layer stays dense.
    for i, (n_in, n_out) in enumerate([(10, 8), (8, 6)]):
        assert f"dense{i}.weight" not in init
        assert init[f"dense{i}.u"].shape == (n_in, 2) and init[f"dense{i}.v"].shape == (2, n_out)
    assert init["dense2.weight"].shape == (6, 1)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMul") == 4 and ops.count("Gemm") == 1
    # The file stores r·(in + out) weights per factorised layer instead of in·out.
    weights = sum(a.size for k, a in init.items() if not k.endswith(".bias") and k != "one")
    assert weights == 2 * (10 + 8) + 2 * (8 + 6) + 6
    # The toolkit's final parameters: the dense weights of the factorised layers are exactly 0.
    flat, sizes = final_parameters(exported["_results"], "low_rank")
    for i, (W, _) in enumerate(plain_layers(flat, sizes)[:2]):
        assert not W.any(), f"dense{i} kept non-zero dense weights"


def test_lora_is_merged_and_routes_differ(exported):
    lora = onnx.load(exported[("onnx", "lora")][0])
    assert not any("lora" in t.name for t in lora.graph.initializer)
    flat, sizes = final_parameters(exported["_results"], "lora")
    W0 = plain_layers(flat, sizes)[0][0]
    merged = {t.name: onnx.numpy_helper.to_array(t) for t in lora.graph.initializer}["dense0.weight"]
    assert np.abs(merged - W0).max() > 1e-4        # the update is in the weights
    r0 = json.load(open(exported[("onnx", "lora_route0")][1]))
    r2 = json.load(open(exported[("onnx", "lora")][1]))
    assert r0["route"] == 0 and r2["route"] == 2
    assert r0["experiences"][0]["logits"] != r2["experiences"][0]["logits"]


def coreml_forward(spec, X):
    """The classifier's probabilities computed in numpy from the spec's layers."""
    blobs = {"features": X.astype(np.float64)}
    nn = spec.neuralNetworkClassifier if spec.WhichOneof("Type") == "neuralNetworkClassifier" else spec.neuralNetwork
    for layer in nn.layers:
        kind = layer.WhichOneof("layer")
        x = blobs[layer.input[0]]
        if kind == "innerProduct":
            p = layer.innerProduct
            if p.weights.HasField("quantization"):
                q = p.weights.quantization
                assert q.numberOfBits == 8
                u = np.frombuffer(p.weights.rawValue, dtype=np.uint8).astype(np.float64).reshape(p.outputChannels, p.inputChannels)
                s = np.asarray(q.linearQuantization.scale)[:, None]
                b = np.asarray(q.linearQuantization.bias)[:, None]
                W = u * s + b
            else:
                W = np.asarray(p.weights.floatValue, dtype=np.float64).reshape(p.outputChannels, p.inputChannels)
            y = x @ W.T + (np.asarray(p.bias.floatValue) if p.hasBias else 0)
        elif kind == "activation":
            a = layer.activation.WhichOneof("NonlinearityType")
            y = {"ReLU": lambda v: np.maximum(v, 0), "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
                 "linear": lambda v: layer.activation.linear.alpha * v + layer.activation.linear.beta}[a](x)
        elif kind == "add":
            y = blobs[layer.input[0]] + blobs[layer.input[1]]
        elif kind == "softmax":
            e = np.exp(x - x.max(1, keepdims=True))
            y = e / e.sum(1, keepdims=True)
        else:
            raise AssertionError(f"unexpected layer {kind}")
        blobs[layer.output[0]] = y
    if nn is spec.neuralNetwork:
        return blobs["embedding"]
    return blobs[spec.neuralNetworkClassifier.labelProbabilityLayerName]


def check_updatable(spec, expected):
    """The rules of Core ML's UpdatableNeuralNetworkValidator, for the parts we write."""
    nn = spec.neuralNetworkClassifier
    marked = [l.name for l in nn.layers if l.isUpdatable]
    if expected is None:
        assert not spec.isUpdatable and not marked and not nn.HasField("updateParams")
        return
    assert spec.isUpdatable and spec.specificationVersion >= 4
    assert marked == expected
    for l in nn.layers:
        if l.isUpdatable:
            assert l.WhichOneof("layer") == "innerProduct"
            p = l.innerProduct
            assert p.weights.isUpdatable and (not p.hasBias or p.bias.isUpdatable)
            assert not p.weights.HasField("quantization")
    up = nn.updateParams
    assert len(up.lossLayers) == 1
    ce = up.lossLayers[0].categoricalCrossEntropyLossLayer
    producers = {o: l for l in nn.layers for o in l.output}
    assert producers[ce.input].WhichOneof("layer") == "softmax"
    assert ce.target not in producers
    sgd = up.optimizer.sgdOptimizer
    assert sgd.HasField("learningRate") and sgd.HasField("miniBatchSize") and up.HasField("epochs")
    lr = sgd.learningRate
    assert lr.range.minValue <= lr.defaultValue <= lr.range.maxValue
    names = {l.name for l in nn.layers}
    assert len(names) == len(nn.layers) and up.lossLayers[0].name not in names
    inputs = {f.name: f for f in spec.description.input}
    training = {f.name: f for f in spec.description.trainingInput}
    assert training["features"] == inputs["features"]
    outputs = {f.name: f for f in spec.description.output}
    assert training[spec.description.predictedFeatureName].type == outputs[spec.description.predictedFeatureName].type
    assert ce.target == spec.description.predictedFeatureName


@pytest.mark.parametrize("name,run,updatable", [(c[0], c[1], c[3]) for c in COREML_CASES])
def test_coreml_spec_loads_validates_and_holds_the_toolkits_weights(exported, name, run, updatable):
    path, ref_path = exported[("coreml", name)]
    spec = ct.utils.load_spec(path)
    ct.models.MLModel(spec, skip_model_load=True)   # coremltools accepts it (Linux cannot compile/predict)
    ref = json.load(open(ref_path))
    if name.endswith("_core"):           # a plain NeuralNetwork with the output `embedding`
        assert spec.WhichOneof("Type") == "neuralNetwork" and not spec.isUpdatable
        assert [o.name for o in spec.description.output] == ["embedding"]
        worst = max(float(np.abs(coreml_forward(spec, np.asarray(e["features"], dtype=np.float32))
                                 - np.asarray(e["embedding"])).max()) for e in ref["experiences"])
        print(f"{name}: Core ML layers in numpy vs toolkit, max |Δembedding| {worst:.3g}")
        assert worst <= TOLERANCE
        return
    assert spec.WhichOneof("Type") == "neuralNetworkClassifier"
    check_updatable(spec, updatable)
    classes = len(ref["experiences"][0]["probabilities"][0])
    assert classes == (2 if not name.startswith("apps") else 8)
    assert list(spec.neuralNetworkClassifier.int64ClassLabels.vector) == list(range(classes))
    worst = 0.0
    for e in ref["experiences"]:
        p = coreml_forward(spec, np.asarray(e["features"], dtype=np.float32))
        worst = max(worst, float(np.abs(p - np.asarray(e["probabilities"])).max()))
    print(f"{name}: Core ML layers in numpy vs toolkit, max |Δp| {worst:.3g}")
    assert worst <= TOLERANCE
    if name in ("plain", "last_layer", "bitfit", "apps"):
        flat, sizes = final_parameters(exported["_results"], run)
        dense = [l.innerProduct for l in spec.neuralNetworkClassifier.layers if l.WhichOneof("layer") == "innerProduct"]
        for i, (W, b) in enumerate(plain_layers(flat, sizes)):
            cw = np.asarray(dense[i].weights.floatValue, dtype=np.float32).reshape(dense[i].outputChannels, -1)
            cb = np.asarray(dense[i].bias.floatValue, dtype=np.float32)
            if sizes[-1] == 1 and i == len(sizes) - 2:      # binary head: rows [0, w], biases [0, b]
                assert not cw[0].any() and cb[0] == 0
                cw, cb = cw[1:], cb[1:]
            assert np.array_equal(cw, W.T) and np.array_equal(cb, b), f"{name} layer {i}"


def test_scheduled_lora_run_exports_its_last_sessions_copy(exported, tmp_path):
    """A scheduled run trains sessions, so LoRA has one copy per session; the default route is
    the last session's."""
    exp = dict(EXPERIMENT, name="scheduled", variants=[v for v in EXPERIMENT["variants"] if v["name"] == "lora"],
               schedule={"type": "daily", "samples_per_day": 20,
                         "when": {"charging": True, "idle": True, "wifi": False, "min_battery": 0, "max_thermal": "fair"}})
    (tmp_path / "s.json").write_text(json.dumps(exp))
    b = exported["_bin"]
    r = subprocess.run([b, "run", str(tmp_path / "s.json"), "-o", str(tmp_path / "s.h5"), "-q", "--plain"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([b, "export", str(tmp_path / "s.h5"), "--format", "onnx", "-o", str(tmp_path / "s.onnx"),
                        "--reference", str(tmp_path / "s.json.ref")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ref = json.load(open(tmp_path / "s.json.ref"))
    assert ref["route"] > 2                  # a session copy, beyond the stream's 3 experiences
    session = ort.InferenceSession(str(tmp_path / "s.onnx"), providers=["CPUExecutionProvider"])
    worst = max(float(np.abs(session.run(["logits"], {"features": np.asarray(e["features"], dtype=np.float32)})[0]
                             - np.asarray(e["logits"])).max()) for e in ref["experiences"])
    print(f"scheduled lora (route {ref['route']}): max |Δlogit| {worst:.3g}")
    assert worst <= TOLERANCE


def test_export_errors_name_what_is_wrong(exported):
    b, results = exported["_bin"], exported["_results"]

    def fails(args, says):
        p = subprocess.run([b, "export", results] + args, capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and says in p.stderr, (args, p.returncode, p.stderr)

    fails(["--run", "nobody", "--format", "onnx", "-o", os.devnull], 'no run with id or name "nobody"')
    fails(["--run", "lora", "--format", "onnx", "--int8", "-o", os.devnull], "LoRA")
    fails(["--run", "plain", "--format", "coreml", "--updatable", "-o", os.devnull], "last_layer and bitfit")
    fails(["--run", "plain", "--format", "onnx", "--route", "7", "-o", os.devnull], "route 7 is out of range")
    fails(["--format", "onnx", "-o", os.devnull], "choose one with --run")
    fails(["--run", "plain", "--format", "coreml", "--int8", "--updatable", "-o", os.devnull], "last_layer and bitfit")
    fails(["--run", "bitfit", "--format", "coreml", "--int8", "--updatable", "-o", os.devnull], "cannot update quantised layers")
    fails(["--run", "bitfit", "--format", "coreml", "--parts", "core", "--updatable", "-o", os.devnull], "core-only")
    fails(["--run", "icarl", "--format", "onnx", "-o", os.devnull], "nearest mean of its exemplars")
    fails(["--run", "entropy", "--format", "onnx", "-o", os.devnull], "routes each sample by entropy")
    fails(["--run", "hat", "--format", "onnx", "--parts", "core", "-o", os.devnull], "task gates")
