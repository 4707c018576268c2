"""BATCH_NORMALIZATION (inference) and LOCAL_RESPONSE_NORMALIZATION (ONNX LRN)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn.descriptors import BatchNormalizationDescriptor, DataLayout, LayerKind, LrnDescriptor
from plugnn.tensor import DataType

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
