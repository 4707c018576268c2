"""ONNX models with random weights: plugnn on CpuRef agrees with onnxruntime (CPUExecutionProvider).

Tolerance: both compute in float32 but sum in different orders (CpuRef's direct loops
against onnxruntime's blocked, vectorized GEMM and convolution kernels; batch norm is folded
into the convolution weights by each in its own way). Each product-sum of K
terms then differs by about sqrt(K) * 2^-24 relative to the magnitude of its terms, and
the differences propagate through ~20 (ResNet-18) to ~50 (MobileNetV2) layers. The weights
are He-scaled so activations stay O(1) and observed differences are a few 1e-7 of the
output's largest magnitude (logits ~1-6). We require max|plugnn - ort| <= 1e-4 * max|ort|
(plus the same absolute floor for outputs near zero): ~100x headroom over float32 rounding,
while any real mistake (a wrong pad, stride, group, layout, fold or activation bound) moves
outputs by O(1) relative to that scale.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import plugnn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import plugnn.onnx  # noqa: E402
from plugnn import synthetic_models  # noqa: E402

RELATIVE_TOLERANCE = 1e-4
IMAGE = 64  # ResNet and MobileNet at 64x64 instead of 224 keep CpuRef (a slow reference backend) quick


@pytest.fixture(scope="module")
def runtime() -> Iterator[plugnn.Runtime]:
    with plugnn.Runtime() as rt:
        if "CpuRef" not in rt.backend_ids:
            pytest.fail(f"the bundled CpuRef backend did not load: {rt.load_report}")
        yield rt


def run_both(runtime: plugnn.Runtime, model: Any, seed: int = 0) -> tuple[dict, dict, Any, dict]:
    network = plugnn.onnx.load(model)
    optimized = plugnn.optimize(network, runtime, ["CpuRef"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    inputs = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    with runtime.load_network(optimized) as loaded:
        ours = loaded.run(inputs)
    theirs = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
    return ours, theirs, optimized, inputs


def assert_agree(ours: dict, theirs: dict) -> None:
    assert set(ours) == set(theirs)
    for name, reference in theirs.items():
        assert ours[name].shape == reference.shape and ours[name].dtype == np.float32
        scale = float(np.abs(reference).max())
        assert scale > 0.1, f"{name}: degenerate output (max |value| {scale}), the comparison would say little"
        difference = float(np.abs(ours[name].astype(np.float64) - reference).max())
        assert difference <= RELATIVE_TOLERANCE * max(scale, 1.0), (
            f"{name}: max |plugnn - onnxruntime| = {difference:.3g} against max |onnxruntime| = {scale:.3g}")


CASES = [
    ("small_cnn", {}, 19),
    ("resnet18", {"image": IMAGE}, 49),
    ("mobilenet_v2", {"image": IMAGE}, 100),
]


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name, kwargs, layers", CASES, ids=[c[0] for c in CASES])
def test_plugnn_on_cpuref_agrees_with_onnxruntime(runtime: plugnn.Runtime, name: str, kwargs: dict,
                                                  layers: int, batch: int) -> None:
    model = synthetic_models.MODELS[name](batch, **kwargs)
    ours, theirs, optimized, inputs = run_both(runtime, model)
    assert optimized.backends_used == ["CpuRef"] and len(optimized.layers) == layers
    assert_agree(ours, theirs)
    if batch == 2:  # each image of the batch comes out as it does alone (same backend: same sums)
        single = plugnn.onnx.load(synthetic_models.MODELS[name](1, **kwargs))
        with runtime.load_network(plugnn.optimize(single, runtime, ["CpuRef"])) as loaded:
            for i in range(2):
                alone = loaded.run({k: np.ascontiguousarray(v[i:i + 1]) for k, v in inputs.items()})
                for key, value in alone.items():
                    np.testing.assert_allclose(ours[key][i:i + 1], value, rtol=1e-6, atol=1e-6)


def test_mnist_cnn_agrees(runtime: plugnn.Runtime) -> None:
    ours, theirs, optimized, _ = run_both(runtime, synthetic_models.mnist_cnn(1), seed=3)
    assert [n.type_name for n in optimized.layers].count("Convolution2d") == 2
    assert_agree(ours, theirs)


def test_small_cnn_is_the_demo(runtime: plugnn.Runtime) -> None:
    """synthetic_models.small_cnn is the `plugnn run` demo: same layers, same weights, same numbers."""
    from plugnn import demo

    image = np.random.default_rng(5).standard_normal((2, 3, 32, 32)).astype(np.float32)
    results = []
    for network in (plugnn.onnx.load(synthetic_models.small_cnn(2)), demo.network(batch=2)):
        with runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"])) as loaded:
            results.append(loaded.run({demo.INPUT_NAME: image})[demo.OUTPUT_NAME])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)


def test_models_are_accepted_by_onnxruntime_1_17_and_later() -> None:
    for name, build in synthetic_models.MODELS.items():
        model = build(1, **({"image": 32} if name in ("resnet18", "mobilenet_v2") else {}))
        assert model.ir_version <= 8 and [o.version for o in model.opset_import if o.domain == ""] == [17], name
        onnx.checker.check_model(model)


def test_full_size_shapes() -> None:
    """The 224x224 models have the canonical architecture (checked by shape inference, not run)."""
    resnet = onnx.shape_inference.infer_shapes(synthetic_models.resnet18(1))
    mobilenet = onnx.shape_inference.infer_shapes(synthetic_models.mobilenet_v2(1))
    for model, convs, params in ((resnet, 20, 11_689_512), (mobilenet, 52, 3_504_872)):
        nodes = model.graph.node
        assert sum(n.op_type == "Conv" for n in nodes) == convs
        count = sum(int(np.prod(t.dims)) for t in model.graph.initializer
                    if not t.name.endswith((".running_mean", ".running_var", ".mean", ".var", ".min", ".max")))
        assert count == params, (model.graph.name, count)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in resnet.graph.value_info}
    assert shapes["maxpool"] == [1, 64, 56, 56] and shapes["avgpool"] == [1, 512, 1, 1]
    depthwise = [n for n in mobilenet.graph.node if n.op_type == "Conv"
                 and next(a.i for a in n.attribute if a.name == "group") > 1]
    assert len(depthwise) == 17
