"""CONVOLUTION: 1-, 2- and 3-D convolution, forward (ONNX Conv) and transposed (ONNX
ConvTranspose), against a NumPy float64 oracle.

The forward oracle pads the input with zeros and sums, per kernel tap, a strided slice times the
tap's weights (one einsum per group); the transposed oracle adds, per kernel tap, every input
element times the tap's weights at j * stride + t * dilation of the full output, then crops
pad_begin from the front. The grid: every spatial rank, strides, dilations, groups (depthwise
included), asymmetric pads, output_padding, 1x1 kernels, kernels larger than the input where the
padding lets them fit, an empty batch, a fused activation, every float type; then every malformed
layer refused with a reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import ActivationDescriptor, ConvolutionDescriptor, ConvolutionOp, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, run_layer

# ---- the oracle ------------------------------------------------------------------------------


def forward_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, desc: ConvolutionDescriptor) -> np.ndarray:
    x, w = x.astype(np.float64), w.astype(np.float64)
    k = desc.spatial_rank
    pads = [(0, 0), (0, 0)] + list(zip(desc.pads_begin, desc.pads_end))
    xp = np.pad(x, pads)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    groups = desc.groups
    og = o // groups
    out_sizes = [(xp.shape[2 + a] - desc.dilations[a] * (w.shape[2 + a] - 1) - 1) // desc.strides[a] + 1
                 for a in range(k)]
    y = np.zeros((n, o, *out_sizes))
    for tap in np.ndindex(*w.shape[2:]):
        window = tuple(slice(tap[a] * desc.dilations[a],
                             tap[a] * desc.dilations[a] + (out_sizes[a] - 1) * desc.strides[a] + 1,
                             desc.strides[a]) for a in range(k))
        part = xp[(slice(None), slice(None), *window)]
        for g in range(groups):
            xs = part[:, g * cg:(g + 1) * cg]
            ws = w[(slice(g * og, (g + 1) * og), slice(None), *tap)]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xs, ws)
    if b is not None:
        y += b.astype(np.float64).reshape((1, o) + (1,) * k)
    return y


def transposed_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                         desc: ConvolutionDescriptor) -> np.ndarray:
    x, w = x.astype(np.float64), w.astype(np.float64)
    k = desc.spatial_rank
    n, c = x.shape[:2]
    groups = desc.groups
    cg, og = c // groups, w.shape[1]
    full = [desc.strides[a] * (x.shape[2 + a] - 1) + desc.dilations[a] * (w.shape[2 + a] - 1) + 1
            for a in range(k)]
    out = [full[a] + desc.output_padding[a] - desc.pads_begin[a] - desc.pads_end[a] for a in range(k)]
    # room on both sides so every crop below is a plain slice
    canvas = np.zeros((n, og * groups, *[full[a] + desc.output_padding[a] for a in range(k)]))
    for tap in np.ndindex(*w.shape[2:]):
        window = tuple(slice(tap[a] * desc.dilations[a],
                             tap[a] * desc.dilations[a] + (x.shape[2 + a] - 1) * desc.strides[a] + 1,
                             desc.strides[a]) for a in range(k))
        for g in range(groups):
            xs = x[:, g * cg:(g + 1) * cg]
            ws = w[(slice(g * cg, (g + 1) * cg), slice(None), *tap)]
            canvas[(slice(None), slice(g * og, (g + 1) * og), *window)] += np.einsum("nc...,co->no...", xs, ws)
    crop = tuple(slice(desc.pads_begin[a], desc.pads_begin[a] + out[a]) for a in range(k))
    y = canvas[(slice(None), slice(None), *crop)]
    if b is not None:
        y = y + b.astype(np.float64).reshape((1, og * groups) + (1,) * k)
    return y


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, desc: ConvolutionDescriptor) -> np.ndarray:
    y = (transposed_reference if desc.op is ConvolutionOp.TRANSPOSED else forward_reference)(x, w, b, desc)
    act = desc.fused_activation
    if act is not None and act.kind.name == "RELU":
        y = np.maximum(y, 0.0)
    elif act is not None and act.kind.name == "BOUNDED_RELU":
        y = np.clip(y, f32(act.alpha), f32(act.beta))
    return y


# ---- the grid --------------------------------------------------------------------------------


def make_desc(op: str, rank: int, *, strides: Any = 1, pads_begin: Any = 0, pads_end: Any = 0, dilations: Any = 1,
              output_padding: Any = 0, groups: int = 1, bias: bool = True,
              act: ActivationDescriptor | None = None) -> ConvolutionDescriptor:
    def per_axis(v: Any) -> tuple[int, ...]:
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * rank

    return ConvolutionDescriptor(op, per_axis(strides), per_axis(pads_begin), per_axis(pads_end), per_axis(dilations),
                                 per_axis(output_padding), groups, bias, act)


def output_shape(desc: ConvolutionDescriptor, x: tuple[int, ...], w: tuple[int, ...]) -> tuple[int, ...]:
    k = desc.spatial_rank
    if desc.op is ConvolutionOp.TRANSPOSED:
        spatial = [desc.strides[a] * (x[2 + a] - 1) + desc.output_padding[a] + desc.dilations[a] * (w[2 + a] - 1)
                   + 1 - desc.pads_begin[a] - desc.pads_end[a] for a in range(k)]
        return (x[0], w[1] * desc.groups, *spatial)
    spatial = [(x[2 + a] + desc.pads_begin[a] + desc.pads_end[a] - desc.dilations[a] * (w[2 + a] - 1) - 1)
               // desc.strides[a] + 1 for a in range(k)]
    return (x[0], w[0], *spatial)


def make_spec(desc: ConvolutionDescriptor, x: tuple[int, ...], w: tuple[int, ...],
              dtype: DataType = DataType.FLOAT32, out: tuple[int, ...] | None = None) -> LayerSpec:
    o = w[1] * desc.groups if desc.op is ConvolutionOp.TRANSPOSED else w[0]
    inputs = [TensorInfo(x, dtype), TensorInfo(w, dtype)] + ([TensorInfo((o,), dtype)] if desc.has_bias else [])
    y = out if out is not None else output_shape(desc, x, w)
    return LayerSpec(LayerKind.CONVOLUTION, "convolution", desc, tuple(inputs), (TensorInfo(y, dtype),))


def arrays_for(spec: LayerSpec, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, info.shape).astype(info.dtype.numpy_name) for info in spec.inputs]


RELU = ActivationDescriptor("relu")
CLIP = ActivationDescriptor("bounded_relu", -0.25, 0.5)

# name -> (descriptor, x shape, w shape)
FORWARD = {
    "1d plain": (make_desc("forward", 1), (2, 3, 9), (4, 3, 3)),
    "1d stride 2 dilation 2 pads": (make_desc("forward", 1, strides=2, dilations=2, pads_begin=2, pads_end=1),
                                    (1, 2, 11), (3, 2, 3)),
    "1d asymmetric pads no bias": (make_desc("forward", 1, pads_begin=3, pads_end=0, bias=False), (2, 2, 5), (2, 2, 4)),
    "1d kernel larger than input": (make_desc("forward", 1, pads_begin=2, pads_end=2), (1, 2, 3), (2, 2, 6)),
    "1d groups 2": (make_desc("forward", 1, groups=2), (1, 4, 7), (6, 2, 3)),
    "1d depthwise": (make_desc("forward", 1, groups=5, pads_begin=1, pads_end=1), (2, 5, 8), (5, 1, 3)),
    "2d plain": (make_desc("forward", 2), (2, 3, 6, 5), (4, 3, 3, 2)),
    "2d strides and dilations per axis": (make_desc("forward", 2, strides=(2, 1), dilations=(1, 3),
                                                    pads_begin=(1, 0), pads_end=(0, 2)), (1, 2, 7, 8), (3, 2, 3, 2)),
    "2d 1x1": (make_desc("forward", 2), (2, 5, 4, 3), (3, 5, 1, 1)),
    "2d depthwise multiplier 2": (make_desc("forward", 2, groups=3, pads_begin=1, pads_end=1), (1, 3, 5, 5),
                                  (6, 1, 3, 3)),
    "3d plain": (make_desc("forward", 3), (1, 2, 4, 5, 6), (3, 2, 2, 3, 2)),
    "3d strided padded dilated": (make_desc("forward", 3, strides=(1, 2, 3), pads_begin=(1, 0, 2),
                                            pads_end=(0, 1, 1), dilations=(2, 1, 1)), (2, 2, 5, 6, 7), (2, 2, 2, 3, 3)),
    "3d groups": (make_desc("forward", 3, groups=2), (1, 4, 3, 3, 3), (4, 2, 2, 2, 2)),
    "3d 1x1x1": (make_desc("forward", 3, bias=False), (1, 3, 2, 3, 4), (2, 3, 1, 1, 1)),
    "empty batch": (make_desc("forward", 2), (0, 3, 5, 5), (2, 3, 3, 3)),
    "no output channels": (make_desc("forward", 1), (1, 3, 5), (0, 3, 3)),
    "relu": (make_desc("forward", 2, act=RELU, pads_begin=1, pads_end=1), (1, 2, 4, 4), (3, 2, 3, 3)),
    "clip": (make_desc("forward", 3, act=CLIP), (1, 2, 3, 3, 3), (2, 2, 2, 2, 2)),
}

TRANSPOSED = {
    "1d plain": (make_desc("transposed", 1), (2, 3, 5), (3, 4, 3)),
    "1d stride 3": (make_desc("transposed", 1, strides=3), (1, 2, 4), (2, 3, 2)),
    "1d stride 2 output_padding 1": (make_desc("transposed", 1, strides=2, output_padding=1), (1, 2, 4), (2, 2, 3)),
    "1d pads crop": (make_desc("transposed", 1, strides=2, pads_begin=1, pads_end=2), (1, 2, 5), (2, 2, 4)),
    "1d dilation 2": (make_desc("transposed", 1, dilations=2, strides=2), (2, 2, 3), (2, 3, 3)),
    "1d output_padding past the full output": (make_desc("transposed", 1, strides=2, output_padding=3),
                                               (1, 1, 3), (1, 2, 2)),
    "1d groups 2": (make_desc("transposed", 1, groups=2, strides=2), (1, 4, 3), (4, 3, 2)),
    "2d plain": (make_desc("transposed", 2), (1, 2, 3, 3), (2, 3, 3, 3)),
    "2d unet up (stride 2 kernel 2)": (make_desc("transposed", 2, strides=2), (2, 4, 3, 4), (4, 2, 2, 2)),
    "2d asymmetric pads and strides": (make_desc("transposed", 2, strides=(3, 2), pads_begin=(1, 0),
                                                 pads_end=(0, 2), output_padding=(1, 1)), (1, 2, 3, 4), (2, 2, 3, 3)),
    "2d depthwise": (make_desc("transposed", 2, groups=3, strides=2, pads_begin=1, pads_end=1, output_padding=1),
                     (1, 3, 3, 3), (3, 1, 3, 3)),
    "2d 1x1": (make_desc("transposed", 2, bias=False), (2, 3, 2, 3), (3, 4, 1, 1)),
    "3d plain": (make_desc("transposed", 3), (1, 2, 2, 3, 2), (2, 2, 2, 2, 3)),
    "3d strided padded dilated": (make_desc("transposed", 3, strides=(2, 1, 3), pads_begin=(0, 1, 1),
                                            pads_end=(1, 0, 2), dilations=(1, 2, 1), output_padding=(1, 0, 2)),
                                  (1, 2, 3, 3, 2), (2, 2, 2, 2, 3)),
    "3d groups": (make_desc("transposed", 3, groups=2, strides=2), (1, 4, 2, 2, 2), (4, 1, 2, 2, 2)),
    "empty batch": (make_desc("transposed", 2, strides=2), (0, 2, 3, 3), (2, 2, 2, 2)),
    "relu": (make_desc("transposed", 2, act=RELU, strides=2), (1, 2, 3, 3), (2, 2, 3, 3)),
}


def _check(backend, desc: ConvolutionDescriptor, x: tuple[int, ...], w: tuple[int, ...], seed: int,
           dtype: DataType = DataType.FLOAT32, rtol: float = RTOL, atol: float = ATOL) -> None:
    spec = make_spec(desc, x, w, dtype)
    arrays = arrays_for(spec, seed)
    (actual,) = run_layer(backend, spec, arrays)
    expected = reference(arrays[0], arrays[1], arrays[2] if desc.has_bias else None, desc)
    assert_close(actual, expected, rtol, atol, spec)


@pytest.mark.parametrize("name", FORWARD)
def test_forward(backend, name: str) -> None:
    desc, x, w = FORWARD[name]
    _check(backend, desc, x, w, seed=len(name))


@pytest.mark.parametrize("name", TRANSPOSED)
def test_transposed(backend, name: str) -> None:
    desc, x, w = TRANSPOSED[name]
    _check(backend, desc, x, w, seed=len(name) + 100)


# float64 is computed in double: it matches the oracle far more closely than float32.
DTYPE_TOLERANCES = {
    DataType.FLOAT64: (1e-12, 1e-12),
    DataType.FLOAT16: (4e-3, 4e-3),
    DataType.BFLOAT16: (3e-2, 3e-2),
}


@pytest.mark.parametrize("dtype", list(DTYPE_TOLERANCES), ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("op", ["forward", "transposed"])
def test_every_float_type(backend, op: str, dtype: DataType) -> None:
    desc = make_desc(op, 2, strides=2, pads_begin=1, pads_end=0)
    w = (3, 2, 3, 3) if op == "forward" else (2, 3, 3, 3)
    spec = make_spec(desc, (1, 2, 5, 4), w, dtype)
    rng = np.random.default_rng(7)
    # inputs already representable in the type, so the oracle sees exactly what the backend sees
    arrays = [rng.uniform(-1, 1, info.shape).astype(info.dtype.numpy_dtype) for info in spec.inputs]
    (actual,) = run_layer(backend, spec, arrays)
    expected = reference(*[a.astype(np.float64) for a in arrays], desc)
    rtol, atol = DTYPE_TOLERANCES[dtype]
    assert_close(actual, expected, rtol, atol, spec)


# ---- malformed layers ---------------------------------------------------------------------------


def _broken(desc: ConvolutionDescriptor, **fields: object) -> ConvolutionDescriptor:
    copy = dataclasses.replace(desc)
    for key, value in fields.items():
        object.__setattr__(copy, key, value)
    return copy


FWD2 = make_desc("forward", 2)
TR1 = make_desc("transposed", 1, strides=2)


def _with(spec: LayerSpec, side: str, index: int, shape: tuple[int, ...] | None = None,
          dtype: DataType | None = None, drop: bool = False) -> LayerSpec:
    infos = list(getattr(spec, side))
    if drop:
        del infos[index]
    else:
        infos[index] = TensorInfo(shape if shape is not None else infos[index].shape, dtype or infos[index].dtype)
    return dataclasses.replace(spec, **{side: tuple(infos)})


def _fwd(**fields: object) -> LayerSpec:
    return make_spec(_broken(FWD2, **fields), (1, 4, 5, 5), (2, 4, 3, 3), out=(1, 2, 3, 3))


MALFORMED = {
    "unknown op": (lambda: _fwd(op=3), r"unknown convolution op 3"),
    "spatial rank 0": (lambda: make_spec(_broken(FWD2, strides=(), pads_begin=(), pads_end=(), dilations=(),
                                                 output_padding=()), (1, 1), (1, 1), out=(1, 1)),
                       r"spatial_rank must be 1, 2 or 3"),
    "stride 0": (lambda: _fwd(strides=(1, 0)), r"strides\[1\] must be >= 1"),
    "dilation 0": (lambda: _fwd(dilations=(0, 1)), r"dilations\[0\] must be >= 1"),
    "groups 0": (lambda: _fwd(groups=0), r"groups must be >= 1"),
    "forward output_padding": (lambda: _fwd(output_padding=(0, 1)), r"only a TRANSPOSED convolution"),
    "channels not divisible by groups": (lambda: make_spec(_broken(FWD2, groups=3), (1, 4, 5, 5), (3, 1, 3, 3),
                                                           out=(1, 3, 3, 3)),
                                         r"input channels \(4\) are not divisible by groups \(3\)"),
    "outputs not divisible by groups": (lambda: make_spec(_broken(FWD2, groups=2), (1, 4, 5, 5), (3, 2, 3, 3),
                                                          out=(1, 3, 3, 3)),
                                        r"output channels .* not divisible by groups"),
    "weights dim 1 wrong": (lambda: make_spec(FWD2, (1, 4, 5, 5), (2, 3, 3, 3), out=(1, 2, 3, 3)),
                            r"weights dim 1 is 3, expected input channels / groups"),
    "transposed weights dim 0 wrong": (lambda: make_spec(TR1, (1, 2, 4), (3, 2, 3), out=(1, 2, 9)),
                                       r"weights dim 0 \(3\) must be the input channels \(2\)"),
    "x of the wrong rank": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "inputs", 0, (4, 5, 5)),
                            r"input x"),
    "weights of the wrong rank": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "inputs", 1,
                                                (2, 4, 3)), r"weights"),
    "empty kernel": (lambda: make_spec(FWD2, (1, 4, 5, 5), (2, 4, 0, 3), out=(1, 2, 6, 3)),
                     r"kernel size of spatial axis 0 is 0"),
    "window larger than the padded input": (lambda: make_spec(FWD2, (1, 4, 2, 5), (2, 4, 3, 3), out=(1, 2, 0, 3)),
                                            r"does not fit the padded input"),
    "wrong output shape": (lambda: make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3), out=(1, 2, 3, 4)), r"output"),
    "bias of the wrong length": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "inputs", 2, (3,)),
                                 r"bias"),
    "bias flagged but missing": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "inputs", 2, drop=True),
                                 r"takes 3 input"),
    "transposed pads past the output": (lambda: make_spec(_broken(TR1, pads_begin=(6,), pads_end=(5,)), (1, 2, 4),
                                                          (2, 2, 3), out=(1, 2, 0)),
                                        r"exceed the transposed output"),
    "transposed empty input axis": (lambda: make_spec(TR1, (1, 2, 0), (2, 2, 3), out=(1, 2, 1)),
                                    r"spatial axis 0 is empty"),
    "int32 tensors": (lambda: make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3), DataType.INT32), r"float"),
    "float16 weights with float32 x": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "inputs", 1,
                                                     dtype=DataType.FLOAT16), r"input 1 is float16"),
    "float64 output": (lambda: _with(make_spec(FWD2, (1, 4, 5, 5), (2, 4, 3, 3)), "outputs", 0,
                                     dtype=DataType.FLOAT64), r"output 0 is float64"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_layer_is_refused(backend, name: str) -> None:
    make, reason = MALFORMED[name]
    assert_refused(backend, make(), reason)
