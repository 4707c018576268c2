"""Refusals through the plugin skeleton (native/include/plugnn/pn_plugin.h): every backend judges a
layer in the same order, so one malformed layer gets one reason from all of them, and a backend
says what it does not do in the skeleton's words."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn import _marshal
from plugnn.descriptors import (
    ActivationDescriptor,
    BatchNormalizationDescriptor,
    CastDescriptor,
    Convolution2dDescriptor,
    CumulativeDescriptor,
    ElementwiseBinaryDescriptor,
    ElementwiseUnaryDescriptor,
    LayerKind,
    PoolingDescriptor,
    ReduceDescriptor,
    ResizeDescriptor,
    ScatterDescriptor,
    TopKDescriptor,
)
from plugnn.layers import LayerSpec
from plugnn._abi import ffi
from plugnn.native import NativeBackend
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_refused, layer_spec, run_layer

MALFORMED = {
    "weights of the wrong depth": layer_spec(LayerKind.CONVOLUTION_2D, Convolution2dDescriptor(),
                                             [(1, 3, 5, 5), (4, 2, 3, 3)], (1, 4, 3, 3)),
    # malformed comes before the element type (CpuRef once named float32 here, CpuAcc the shapes)
    "float16 and malformed": layer_spec(LayerKind.CONVOLUTION_2D, Convolution2dDescriptor(),
                                        [(1, 3, 5, 5), (4, 2, 3, 3)], (1, 4, 3, 3), dtypes=[DataType.FLOAT16] * 2,
                                        output_dtype=DataType.FLOAT16),
    # CpuAcc has no BatchNormalization kernel, but a malformed layer is refused for what is wrong
    "mean of the wrong length": layer_spec(LayerKind.BATCH_NORMALIZATION, BatchNormalizationDescriptor(),
                                           [(2, 3, 4, 4), (3,), (3,), (4,), (3,)], (2, 3, 4, 4)),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_one_malformed_layer_gets_one_reason_from_every_backend(runtime: plugnn.Runtime, name: str) -> None:
    reasons = {backend_id: runtime.backend(backend_id).is_layer_supported(MALFORMED[name]).reason
               for backend_id in runtime.backend_ids}
    assert len(set(reasons.values())) == 1, reasons


def test_the_element_type_rule_has_one_wording(backend) -> None:
    """A backend that does not run a float16 activation says so in the skeleton's words; one that
    says it does (CpuRef runs every float type) computes it."""
    spec = layer_spec(LayerKind.ACTIVATION, ActivationDescriptor("relu"), [(2, 3)], (2, 3),
                      dtypes=[DataType.FLOAT16], output_dtype=DataType.FLOAT16)
    support = backend.is_layer_supported(spec)
    if support.supported:
        x = np.array([[-1.5, 0.0, 2.25], [65504.0, -0.0, -7.0]], np.float16)
        (y,) = run_layer(backend, spec, [x])
        np.testing.assert_array_equal(y, np.maximum(x, np.float16(0)))
    else:
        assert support.reason == f"{backend.backend_id} runs Activation on float32 only; input 0 is float16"


def test_a_kind_newer_than_the_backend_is_refused_not_failed(backend) -> None:
    """A layer kind appended by a later MINOR version: a valid request the backend cannot serve."""
    if not isinstance(backend, NativeBackend):
        pytest.skip("raw C layers: native backends only")
    keep: list = []
    c_layer = _marshal.to_c_layer(layer_spec(LayerKind.ACTIVATION, ActivationDescriptor("relu"), [(2, 3)], (2, 3)),
                                  keep)
    c_layer.kind = 99
    supported = ffi.new("pn_bool*", 1)
    reason = ffi.new("char[]", 256)
    out = ffi.new("pn_string_out*", {"data": reason, "capacity": 256})
    status = backend._fn("is_layer_supported")(backend._c, c_layer, supported, out)
    assert status == 0 and supported[0] == 0
    assert ffi.string(reason).decode() == f"{backend.backend_id} does not know layer kind 99"


# ---- quantized tensors: CpuRef computes with plain integers only ------------------------------------

T = DataType
Q = TensorInfo((4,), T.INT8, quant_scale=0.25, quant_zero_point=-2)  # real = 0.25 * (q + 2)
I8 = TensorInfo((4,), T.INT8)


@pytest.mark.parametrize("kind, descriptor, inputs, outputs", [
    (LayerKind.CAST, CastDescriptor(), (Q,), (TensorInfo((4,), T.FLOAT32),)),
    (LayerKind.ELEMENTWISE_UNARY, ElementwiseUnaryDescriptor("abs"), (Q,), (I8,)),
    (LayerKind.ELEMENTWISE_BINARY, ElementwiseBinaryDescriptor("add"), (Q, I8), (I8,)),
    (LayerKind.SELECT, None, (TensorInfo((4,), T.BOOL), Q, Q), (I8,)),
    (LayerKind.REDUCE, ReduceDescriptor("sum", (0,)), (Q,), (TensorInfo((1,), T.INT8),)),
    (LayerKind.CUMULATIVE, CumulativeDescriptor("sum", 0), (Q,), (I8,)),
    (LayerKind.TOP_K, TopKDescriptor(0), (Q,), (TensorInfo((2,), T.INT8), TensorInfo((2,), T.INT64))),
    (LayerKind.POOLING, PoolingDescriptor("max", kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(0,),
                                          dilations=(1,)),
     (TensorInfo((1, 1, 4), T.INT8, quant_scale=0.25, quant_zero_point=-2),), (TensorInfo((1, 1, 3), T.INT8),)),
    (LayerKind.RESIZE, ResizeDescriptor("nearest", scales=(2.0,)), (Q,), (TensorInfo((8,), T.INT8),)),
    (LayerKind.SCATTER, ScatterDescriptor("elements", "add", 0), (Q, TensorInfo((4,), T.INT64), I8), (I8,)),
], ids=lambda v: v.name.lower() if isinstance(v, LayerKind) else None)
def test_cpuref_refuses_quantized_tensors(runtime: plugnn.Runtime, kind: LayerKind, descriptor: object,
                                         inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...]) -> None:
    """A quantized int8 (real = scale * (q - zero point)) is not a plain integer: the kinds that
    compute with element values say so instead of computing with q."""
    spec = LayerSpec(kind, "quantized", descriptor, inputs, outputs)
    first = next(i for i, info in enumerate(inputs) if info.quant_scale)
    assert_refused(runtime.backend("CpuRef"), spec,
                   rf"CpuRef runs \w+ on plain tensors only; input {first} is quantized int8 \(quant_scale 0.25, "
                   r"zero point -2\)")
