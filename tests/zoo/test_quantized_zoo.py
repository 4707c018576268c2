"""Zoo models quantized at test time by onnxruntime's quantizer, each file run on plugnn and on
onnxruntime with the same seeded inputs at the CI shape:

- CNNs (ResNet-18, MobileNetV2, EfficientNet-B0) through `quant_pre_process` and
  `quantize_static` in the QOperator format (per-channel s8 weights, u8 activations, calibrated
  on 4 seeded inputs): com.microsoft QGemm, QLinearAdd, QLinearGlobalAveragePool, QLinearMul,
  QLinearSigmoid. Compared in quantization steps of the output: at most one, on at most 1 % of
  the logits (measured: 0 steps, every element equal).
- the same CNNs in the QDQ format (ResNet-18, MobileNetV2): plugnn rewrites every
  DequantizeLinear -> Conv -> QuantizeLinear group into QLinearConv (plugnn.onnx.qdq), as
  onnxruntime's optimizer does; no float Conv, Gemm or Add is left; compared against onnxruntime
  with its optimizations on, in steps of the output as above.
- BERT- and DistilBERT-tiny through onnxruntime's transformer optimizer and `quantize_dynamic`:
  QAttention, QEmbedLayerNormalization; float outputs within 1e-3 of the output range. Most
  elements agree to 1e-6; where an activation lies on a rounding boundary of a
  DynamicQuantizeLinear (its float32 input computed by float ops whose last bits differ between
  the runtimes), its uint8 value differs by one step and the rows it feeds move by that step
  times the weights (measured: 55 of 2048 values of one token, at most 1.8e-4 of the range).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
oq = pytest.importorskip("onnxruntime.quantization")
optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")

import plugnn  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: E402
from ort_int8 import REDUCE_RANGE  # noqa: E402
from zoo import weights  # noqa: E402


def _entry(name: str) -> dict[str, Any]:
    return next(e for e in weights.load_manifest()["models"] if e["name"] == name)


def _feeds(entry: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    shapes = weights.input_shapes(entry, "ci", 1)
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        shape, values = shapes[spec["name"]], spec["values"]
        if spec["dtype"].startswith("int"):
            feeds[spec["name"]] = rng.integers(values.get("low", 0), values.get("high", 2), shape).astype(spec["dtype"])
        else:
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.float32)
    return feeds


class _Calibration(oq.CalibrationDataReader):
    def __init__(self, entry: dict[str, Any]) -> None:
        self._feeds = iter([_feeds(entry, 100 + k) for k in range(4)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def _output_step(path: Path) -> float:
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] in
            {o.name for o in model.graph.output}]
    return float(inits[last[-1].input[1]].reshape(-1)[0])


def _check_steps(target: Path, entry: dict[str, Any]) -> None:
    """plugnn against onnxruntime on the quantized file: at most one step of the output, on at
    most 1 % of the logits."""
    step = _output_step(target)
    data = target.read_bytes()
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    session = plugnn.InferenceSession(data)
    feeds = _feeds(entry, 0)
    want, got = reference.run(None, feeds)[0], session.run(None, feeds)[0]
    steps = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    assert steps.max() <= 1.0 + 1e-3 and (steps > 1e-3).mean() <= 0.01, (steps.max(), (steps > 1e-3).mean())


@pytest.mark.parametrize("name, contrib", [
    ("resnet18", {"QGemm", "QLinearAdd", "QLinearGlobalAveragePool"}),
    ("mobilenet_v2", {"QGemm", "QLinearAdd", "QLinearGlobalAveragePool"}),
    ("efficientnet_b0", {"QGemm", "QLinearAdd", "QLinearGlobalAveragePool", "QLinearMul", "QLinearSigmoid"})])
def test_qoperator_cnn(name: str, contrib: set[str], tmp_path: Path) -> None:
    entry = _entry(name)
    raw, prepared, target = tmp_path / "raw.onnx", tmp_path / "prepared.onnx", tmp_path / "int8.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(raw))
    quant_pre_process(str(raw), str(prepared))
    oq.quantize_static(str(prepared), str(target), _Calibration(entry), quant_format=oq.QuantFormat.QOperator,
                       per_channel=True, activation_type=oq.QuantType.QUInt8, weight_type=oq.QuantType.QInt8, reduce_range=REDUCE_RANGE)
    assert contrib <= {n.op_type for n in onnx.load(str(target)).graph.node if n.domain == "com.microsoft"}
    _check_steps(target, entry)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_qdq_cnn(name: str, tmp_path: Path) -> None:
    from plugnn.onnx.importer import read_model

    entry = _entry(name)
    raw, prepared, target = tmp_path / "raw.onnx", tmp_path / "prepared.onnx", tmp_path / "qdq.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(raw))
    quant_pre_process(str(raw), str(prepared))
    oq.quantize_static(str(prepared), str(target), _Calibration(entry), quant_format=oq.QuantFormat.QDQ,
                       per_channel=True, activation_type=oq.QuantType.QUInt8, weight_type=oq.QuantType.QInt8,
                       reduce_range=REDUCE_RANGE)
    written = {n.op_type for n in onnx.load(str(target)).graph.node}
    assert {"Conv", "QuantizeLinear", "DequantizeLinear"} <= written
    rewritten = {n.op_type for n in read_model(str(target))[0].graph.node}
    assert "QLinearConv" in rewritten and not rewritten & {"Conv", "Gemm", "Add"}, rewritten
    _check_steps(target, entry)


@pytest.mark.parametrize("name", ["bert_tiny", "distilbert_tiny"])
def test_dynamic_optimized_transformer(name: str, tmp_path: Path) -> None:
    entry = _entry(name)
    source, fused, target = tmp_path / "f.onnx", tmp_path / "fused.onnx", tmp_path / "dyn.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(source))
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    optimizer.optimize_model(str(source), model_type="bert", num_heads=4, hidden_size=64,
                             opt_level=0).save_model_to_file(str(fused))
    oq.quantize_dynamic(str(fused), str(target), weight_type=oq.QuantType.QInt8,
                        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}, reduce_range=REDUCE_RANGE)
    ops = {n.op_type for n in onnx.load(str(target)).graph.node if n.domain == "com.microsoft"}
    assert {"QAttention", "QEmbedLayerNormalization"} <= ops
    data = target.read_bytes()
    feeds = _feeds(entry, 0)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = plugnn.InferenceSession(data).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-3 * float(np.abs(w).max()))
