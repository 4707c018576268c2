"""BATCH_NORMALIZATION (inference), LOCAL_RESPONSE_NORMALIZATION (ONNX LRN) and NORMALIZATION
(LAYER, RMS, GROUP with instance normalization, LP)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn.descriptors import (
    BatchNormalizationDescriptor,
    DataLayout,
    LayerKind,
    LrnDescriptor,
    NormalizationDescriptor,
    NormalizationOp,
)
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, layer_spec, run_layer, shape_id


def channel_axis(rank: int, layout: DataLayout) -> int:
    """Where C lies: the layout decides for rank 4; rank 2 and 3 are channels-second."""
    return 3 if rank == 4 and layout is DataLayout.NHWC else 1


def batch_norm_reference(x, scale, bias, mean, var, desc: BatchNormalizationDescriptor) -> np.ndarray:
    shape = [1] * x.ndim
    shape[channel_axis(x.ndim, desc.layout)] = -1

    def per_channel(v: np.ndarray) -> np.ndarray:
        return v.astype(np.float64).reshape(shape)

    return (per_channel(scale) * (x.astype(np.float64) - per_channel(mean))
            / np.sqrt(per_channel(var) + f32(desc.epsilon)) + per_channel(bias))


BATCH_NORM_CASES = [
    ((2, 3), DataLayout.NCHW),
    ((2, 3, 5), DataLayout.NCHW),
    ((2, 3, 5), DataLayout.NHWC),  # rank 3 is channels-second whatever the layout says
    ((2, 3, 4, 5), DataLayout.NCHW),
    ((2, 4, 5, 3), DataLayout.NHWC),
    ((1, 1, 1, 1), DataLayout.NCHW),
    ((0, 3, 2, 2), DataLayout.NCHW),
]


@pytest.mark.parametrize("constant_parameters", [True, False], ids=["constant", "runtime"])
@pytest.mark.parametrize("shape, layout", BATCH_NORM_CASES,
                         ids=lambda v: v.name if isinstance(v, DataLayout) else shape_id(v))
def test_batch_norm(backend, shape: tuple[int, ...], layout: DataLayout, constant_parameters: bool) -> None:
    rng = np.random.default_rng(701)
    x = rng.standard_normal(shape).astype(np.float32)
    channels = shape[channel_axis(len(shape), layout)]
    scale, bias, mean = (rng.standard_normal(channels).astype(np.float32) for _ in range(3))
    var = (np.abs(rng.standard_normal(channels)) + 0.1).astype(np.float32)
    desc = BatchNormalizationDescriptor(epsilon=1e-3, layout=layout)
    inputs = [x, scale, bias, mean, var]
    spec = layer_spec(LayerKind.BATCH_NORMALIZATION, desc, inputs, shape, name=f"bn{list(shape)}",
                      constants=[1, 2, 3, 4] if constant_parameters else ())
    (y,) = run_layer(backend, spec, inputs)
    assert_close(y, batch_norm_reference(x, scale, bias, mean, var, desc), RTOL, ATOL, spec)


def lrn_reference(x: np.ndarray, desc: LrnDescriptor) -> np.ndarray:
    """y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2, c + size/2])^beta."""
    x = x.astype(np.float64)
    if desc.layout is DataLayout.NHWC:
        x = x.transpose(0, 3, 1, 2)
    channels = x.shape[1]
    squares = np.zeros_like(x)
    for c in range(channels):
        low = max(0, c - (desc.size - 1) // 2)
        high = min(channels - 1, c + math.ceil((desc.size - 1) / 2))
        squares[:, c] = (x[:, low:high + 1] ** 2).sum(axis=1)
    y = x / (f32(desc.bias) + f32(desc.alpha) / desc.size * squares) ** f32(desc.beta)
    return y.transpose(0, 2, 3, 1) if desc.layout is DataLayout.NHWC else y


@pytest.mark.parametrize("layout", [DataLayout.NCHW, DataLayout.NHWC], ids=lambda layout: layout.name)
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize("shape", [(2, 7, 3, 3), (1, 1, 2, 2), (1, 4, 1, 1)], ids=shape_id)
def test_lrn(backend, shape: tuple[int, ...], size: int, layout: DataLayout) -> None:
    n, c, h, w = shape
    x_shape = shape if layout is DataLayout.NCHW else (n, h, w, c)
    x = np.random.default_rng(702).standard_normal(x_shape).astype(np.float32) * 3
    desc = LrnDescriptor(size=size, alpha=0.3, beta=0.75, bias=1.5, layout=layout)
    spec = layer_spec(LayerKind.LOCAL_RESPONSE_NORMALIZATION, desc, [x], x_shape, name=f"lrn{size}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, lrn_reference(x, desc), RTOL, ATOL, spec)


# ---- malformed layers -----------------------------------------------------------------

BN = BatchNormalizationDescriptor()
X = (2, 3, 4, 4)
C = (3,)


@pytest.mark.parametrize("desc, inputs, output, dtypes, reason", [
    pytest.param(BN, [X, C, C, (4,), C], X, None, "mean", id="mean of wrong length"),
    pytest.param(BN, [X, (3, 1), C, C, C], X, None, "scale", id="scale of rank 2"),
    pytest.param(BatchNormalizationDescriptor(layout="nhwc"), [X, C, C, C, C], X, None, "scale",
                 id="NHWC reads C from the last dim"),
    pytest.param(BN, [C, C, C, C, C], C, None, "rank", id="x of rank 1"),
    pytest.param(BN, [(1, 3, 2, 2, 2), C, C, C, C], (1, 3, 2, 2, 2), None, "rank", id="x of rank 5"),
    pytest.param(BN, [X, C, C, C], X, None, "input", id="var missing"),
    pytest.param(BN, [X, C, C, C, C], (2, 3, 4, 5), None, "output", id="output shape differs"),
    pytest.param(BatchNormalizationDescriptor(epsilon=-1.0), [X, C, C, C, C], X, None, "epsilon",
                 id="negative epsilon"),
    # a backend without the kernel says so first (the skeleton's order: kind before element type)
    pytest.param(BN, [X, C, C, C, C], X, [DataType.FLOAT32] * 4 + [DataType.FLOAT16],
                 "float16|has no BatchNormalization kernel", id="float16 var"),
])
def test_malformed_batch_norm_is_refused(backend, desc, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.BATCH_NORMALIZATION, desc, inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


LRN = LrnDescriptor(size=3)


@pytest.mark.parametrize("desc, inputs, output, dtypes, reason", [
    pytest.param(LRN, [(1, 3, 4)], (1, 3, 4), None, "rank", id="input of rank 3"),
    pytest.param(LRN, [(1, 3, 2, 2)], (1, 3, 2, 3), None, "output", id="output shape differs"),
    pytest.param(LRN, [(1, 3, 2, 2), (1, 3, 2, 2)], (1, 3, 2, 2), None, "input", id="two inputs"),
    pytest.param(LrnDescriptor(size=3, beta=float("nan")), [(1, 3, 2, 2)], (1, 3, 2, 2), None, "finite",
                 id="NaN beta"),
    pytest.param(LRN, [(1, 3, 2, 2)], (1, 3, 2, 2), [DataType.INT8], "int8|has no LocalResponseNormalization kernel",
                 id="int8 input"),
])
def test_malformed_lrn_is_refused(backend, desc, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.LOCAL_RESPONSE_NORMALIZATION, desc, inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


# ---- NORMALIZATION (LAYER, RMS, GROUP, LP) -------------------------------------------------------
#
# The oracle: float64 NumPy of the header's formulas (population variance, epsilon inside the
# square root, scale and bias broadcast to x.shape[axis:] (LAYER, RMS) or per channel (GROUP),
# a zero Lp norm giving 0), fed the very inputs the backend gets.

FLOAT_TOLERANCE = {DataType.FLOAT32: (RTOL, ATOL), DataType.FLOAT16: (2e-3, 2e-3),
                   DataType.BFLOAT16: (1.6e-2, 1.6e-2), DataType.FLOAT64: (1e-12, 1e-12)}


def normalization_reference(desc: NormalizationDescriptor, x: np.ndarray, scale=None, bias=None) -> np.ndarray:
    x = x.astype(np.float64)
    eps = f32(desc.epsilon)
    op = desc.op
    if op is NormalizationOp.LP:
        axis = desc.axis % x.ndim
        norm = np.abs(x).sum(axis, keepdims=True) if desc.num_groups == 1 else \
            np.sqrt((x * x).sum(axis, keepdims=True))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norm == 0, 0.0, x / norm)
    if op is NormalizationOp.GROUP:
        n, c = x.shape[:2]
        grouped = x.reshape(n, desc.num_groups, x.size // max(n * desc.num_groups, 1))
        with np.errstate(invalid="ignore"):
            mean = grouped.mean(2, keepdims=True) if grouped.size else np.zeros((n, desc.num_groups, 1))
            var = ((grouped - mean) ** 2).mean(2, keepdims=True) if grouped.size else mean
        y = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
        per_channel = (1, c) + (1,) * (x.ndim - 2)
        y = y * scale.astype(np.float64).reshape(per_channel)
        return y + bias.astype(np.float64).reshape(per_channel) if bias is not None else y
    axes = tuple(range(desc.axis % x.ndim, x.ndim))
    if x.size == 0:  # nothing to normalize
        return x
    if op is NormalizationOp.LAYER:
        mean = x.mean(axes, keepdims=True)
        y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axes, keepdims=True) + eps)
    else:
        y = x / np.sqrt((x * x).mean(axes, keepdims=True) + eps)
    y = y * scale.astype(np.float64)
    return y + bias.astype(np.float64) if bias is not None else y


def normalization_spec(desc: NormalizationDescriptor, arrays, dtype: DataType = DataType.FLOAT32,
                       constants=()) -> LayerSpec:
    infos = tuple(TensorInfo(np.shape(a), dtype) for a in arrays)
    constant_data = tuple(np.asarray(a) if i in constants else None for i, a in enumerate(arrays)) \
        if constants else ()
    return LayerSpec(LayerKind.NORMALIZATION, f"normalization_{getattr(desc.op, 'name', desc.op)}".lower(), desc, infos,
                     (TensorInfo(np.shape(arrays[0]), dtype),), constants=constant_data)


def check_normalization(backend, desc: NormalizationDescriptor, arrays, dtype: DataType = DataType.FLOAT32,
                        constants=()) -> np.ndarray:
    arrays = [np.asarray(a, dtype.numpy_dtype) for a in arrays]
    spec = normalization_spec(desc, arrays, dtype, constants)
    (y,) = run_layer(backend, spec, arrays)
    assert_close(y, normalization_reference(desc, *arrays), *FLOAT_TOLERANCE[dtype], spec)
    return y


TRAILING_CASES = [
    # x shape, axis, scale shape (broadcast to x.shape[axis:])
    ((8,), 0, (8,)),
    ((3, 8), -1, (8,)),
    ((3, 8), 1, (1,)),
    ((3, 8), 0, (3, 8)),
    ((3, 8), -2, (8,)),
    ((2, 3, 4), 1, (3, 4)),
    ((2, 3, 4), 1, (3, 1)),
    ((2, 3, 4), -1, ()),
    ((2, 3, 4, 5), 2, (4, 5)),
    ((2, 3, 4, 5), 0, (3, 4, 5)),
    ((2, 3, 4, 5), -3, (1, 4, 1)),
    ((1, 1, 768), -1, (768,)),
]


@pytest.mark.parametrize("constant_parameters", [True, False], ids=["constant", "runtime"])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape, axis, scale_shape", TRAILING_CASES, ids=shape_id)
@pytest.mark.parametrize("op", [NormalizationOp.LAYER, NormalizationOp.RMS], ids=lambda o: o.name)
def test_layer_and_rms_normalization(backend, op, shape, axis: int, scale_shape, with_bias: bool,
                                     constant_parameters: bool) -> None:
    rng = np.random.default_rng(1901)
    x = rng.standard_normal(shape) * 3 + 1
    arrays = [x, rng.standard_normal(scale_shape)] + ([rng.standard_normal(scale_shape)] if with_bias else [])
    desc = NormalizationDescriptor(op, axis, 0, 1e-3, with_bias)
    check_normalization(backend, desc, arrays, constants=range(1, len(arrays)) if constant_parameters else ())


GROUP_CASES = [
    # x shape, num_groups
    ((2, 6), 3),
    ((2, 6, 5), 1),
    ((2, 6, 5), 2),
    ((2, 6, 5), 6),      # instance normalization
    ((1, 4, 3, 3), 2),
    ((3, 8, 2, 5), 8),   # instance normalization
    ((2, 4, 2, 3, 2), 4),
    ((1, 32, 4, 4), 8),
]


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape, groups", GROUP_CASES, ids=shape_id)
def test_group_normalization(backend, shape, groups: int, with_bias: bool) -> None:
    rng = np.random.default_rng(1902)
    c = shape[1]
    arrays = [rng.standard_normal(shape) * 2 - 1, rng.standard_normal(c)] + ([rng.standard_normal(c)] if with_bias else [])
    check_normalization(backend, NormalizationDescriptor("group", 0, groups, 1e-5, with_bias), arrays)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2), ((2, 3, 4, 2), 3)],
                         ids=shape_id)
def test_lp_normalization(backend, shape, axis: int, p: int) -> None:
    x = np.random.default_rng(1903).standard_normal(shape)
    check_normalization(backend, NormalizationDescriptor("lp", axis, p), [x])


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_of_a_zero_line_is_zero(backend, p: int) -> None:
    x = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [0.0, 0.0, -2.0]])
    y = check_normalization(backend, NormalizationDescriptor("lp", 1, p), [x])
    assert (y[0] == 0).all() and not np.isnan(y).any()


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64], ids=lambda t: t.name)
@pytest.mark.parametrize("op", ["layer", "rms", "group", "lp"])
def test_normalization_float_types(backend, op: str, dtype: DataType) -> None:
    """Computed in double, rounded once to the output type."""
    rng = np.random.default_rng(1904)
    x = rng.standard_normal((2, 4, 3, 2))
    if op == "lp":
        check_normalization(backend, NormalizationDescriptor(op, 1, 2), [x], dtype)
        return
    scale, bias = (rng.standard_normal(4 if op == "group" else (3, 2)) for _ in range(2))
    desc = NormalizationDescriptor(op, -2, 2 if op == "group" else 0, 1e-3, True)
    check_normalization(backend, desc, [x, scale, bias], dtype)


@pytest.mark.parametrize("op", ["layer", "rms", "group"])
def test_normalization_of_constant_values_uses_epsilon(backend, op: str) -> None:
    """Zero variance: (x - mean) / sqrt(eps) is 0 for LAYER and GROUP, RMS divides by sqrt(x^2 + eps)."""
    x = np.full((2, 4, 3), 2.5)
    scale, bias = np.ones(4 if op == "group" else 3), np.full(4 if op == "group" else 3, 0.5)
    check_normalization(backend, NormalizationDescriptor(op, -1, 2 if op == "group" else 0, 1e-2, True),
                        [x, scale, bias])


@pytest.mark.parametrize("op, shape", [("layer", (0, 4)), ("rms", (3, 0)), ("group", (0, 4, 2)),
                                       ("group", (2, 4, 0)), ("lp", (0, 3))], ids=str)
def test_normalization_of_empty_tensors(backend, op: str, shape) -> None:
    x = np.zeros(shape)
    if op == "lp":
        check_normalization(backend, NormalizationDescriptor(op, 1, 2), [x])
        return
    width = shape[1] if op == "group" else shape[-1]
    desc = NormalizationDescriptor(op, -1, 2 if op == "group" else 0, 1e-5, False)
    check_normalization(backend, desc, [x, np.ones(width)])


NORM_X = (2, 4, 3)
NORM_MALFORMED = {
    "groups do not divide C": (NormalizationDescriptor("group", 0, 3, 1e-5, True), [NORM_X, (4,), (4,)], None,
                               "divide"),
    "zero groups": (NormalizationDescriptor("group", 0, 0, 1e-5, False), [NORM_X, (4,)], None, "num_groups"),
    "group scale per group": (NormalizationDescriptor("group", 0, 2, 1e-5, False), [NORM_X, (2,)], None, "scale"),
    "group bias of rank 2": (NormalizationDescriptor("group", 0, 2, 1e-5, True), [NORM_X, (4,), (4, 1)], None,
                             "bias"),
    "group of rank 1": (NormalizationDescriptor("group", 0, 1, 1e-5, False), [(4,), (4,)], None, "rank"),
    "layer scale not broadcasting": (NormalizationDescriptor("layer", -1, 0, 1e-5, False), [NORM_X, (4,)], None,
                                     "scale"),
    "layer scale of higher rank": (NormalizationDescriptor("layer", -1, 0, 1e-5, False), [NORM_X, (1, 3)], None,
                                   "scale"),
    "rms bias not broadcasting": (NormalizationDescriptor("rms", 1, 0, 1e-5, True), [NORM_X, (4, 3), (3, 4)], None,
                                  "bias"),
    "axis out of range": (NormalizationDescriptor("layer", 3, 0, 1e-5, False), [NORM_X, (3,)], None, "axis"),
    "rank 0": (NormalizationDescriptor("rms", -1, 0, 1e-5, False), [(), ()], None, "rank"),
    "negative epsilon": (NormalizationDescriptor("layer", -1, 0, -1e-5, False), [NORM_X, (3,)], None, "epsilon"),
    "infinite epsilon": (NormalizationDescriptor("rms", -1, 0, float("inf"), False), [NORM_X, (3,)], None,
                         "epsilon"),
    "NaN epsilon": (NormalizationDescriptor("group", 0, 2, float("nan"), False), [NORM_X, (4,)], None, "epsilon"),
    "lp with p 3": (NormalizationDescriptor("lp", 1, 3), [NORM_X], None, "p = 1 or 2"),
    "lp with a scale": (NormalizationDescriptor("lp", 1, 2), [NORM_X, (3,)], None, "input"),
    "lp with a bias flag": (NormalizationDescriptor("lp", 1, 2, 1e-5, True), [NORM_X], None, "bias"),
    "bias flag without bias": (NormalizationDescriptor("layer", -1, 0, 1e-5, True), [NORM_X, (3,)], None, "input"),
    "bias without the flag": (NormalizationDescriptor("layer", -1, 0, 1e-5, False), [NORM_X, (3,), (3,)], None,
                              "input"),
    "int32 x": (NormalizationDescriptor("layer", -1, 0, 1e-5, False), [NORM_X, (3,)], [DataType.INT32] * 2, "float"),
    "float16 scale with float32 x": (NormalizationDescriptor("layer", -1, 0, 1e-5, False), [NORM_X, (3,)],
                                     [DataType.FLOAT32, DataType.FLOAT16], "float16"),
}


@pytest.mark.parametrize("name", list(NORM_MALFORMED))
def test_malformed_normalization_is_refused(backend, name: str) -> None:
    desc, inputs, dtypes, reason = NORM_MALFORMED[name]
    dtypes = dtypes or [DataType.FLOAT32] * len(inputs)
    spec = LayerSpec(LayerKind.NORMALIZATION, name, desc, tuple(TensorInfo(s, t) for s, t in zip(inputs, dtypes)),
                     (TensorInfo(inputs[0], dtypes[0]),))
    assert_refused(backend, spec, reason)


def test_unknown_normalization_op_is_refused(backend) -> None:
    desc = NormalizationDescriptor("layer", -1, 0, 1e-5, False)
    object.__setattr__(desc, "op", 5)  # past the dataclass' own checks, as a C caller could
    reason = "unknown operation"
    spec = normalization_spec(desc, [np.zeros(NORM_X), np.zeros(3)])
    assert_refused(backend, spec, reason)


def test_normalization_output_shape_must_be_x(backend) -> None:
    desc = NormalizationDescriptor("layer", -1, 0, 1e-5, False)
    spec = LayerSpec(LayerKind.NORMALIZATION, "bad_output", desc,
                     (TensorInfo(NORM_X, DataType.FLOAT32), TensorInfo((3,), DataType.FLOAT32)),
                     (TensorInfo((2, 4, 4), DataType.FLOAT32),))
    assert_refused(backend, spec, "output")
