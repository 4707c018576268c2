"""DEFORMABLE_CONVOLUTION (ONNX DeformConv) against a NumPy float64 implementation of
backend_api.h's formula, against onnx.reference (2-D), and, with zero offsets and no mask,
against a plain convolution.

The grid: 1-, 2- and 3-D; strides, pads, dilations; groups and offset groups; bias and mask;
offsets that move taps outside the input; every float type. Then every malformed layer refused.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from plugnn.descriptors import DeformableConvolutionDescriptor, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, run_layer


def _interpolate(plane: np.ndarray, p: list[float]) -> float:
    """Multilinear interpolation of `plane` at p, corners outside reading 0."""
    total = 0.0
    base = [math.floor(v) for v in p]
    for corner in itertools.product((0, 1), repeat=len(p)):
        index = [b + c for b, c in zip(base, corner)]
        if all(0 <= i < n for i, n in zip(index, plane.shape)):
            weight = math.prod((v - b) if c else 1 - (v - b) for v, b, c in zip(p, base, corner))
            total += weight * plane[tuple(index)]
    return total


def deform_reference(x, w, offset, bias, mask, desc: DeformableConvolutionDescriptor) -> np.ndarray:
    x, w, offset = (np.asarray(a, np.float64) for a in (x, w, offset))
    r = desc.spatial_rank
    n, c = x.shape[:2]
    o = w.shape[0]
    kernel = w.shape[2:]
    taps = list(itertools.product(*[range(k) for k in kernel]))
    out = offset.shape[2:]
    c_group, o_group, c_offset = c // desc.groups, o // desc.groups, c // desc.offset_groups
    y = np.zeros((n, o, *out))
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // o_group
        for pos in itertools.product(*[range(s) for s in out]):
            total = float(bias[oc]) if bias is not None else 0.0
            for ci in range(c_group):
                ch = g * c_group + ci
                og = ch // c_offset
                for t, tap in enumerate(taps):
                    p = [pos[a] * desc.strides[a] - desc.pads_begin[a] + tap[a] * desc.dilations[a]
                         + offset[(b, (og * len(taps) + t) * r + a, *pos)] for a in range(r)]
                    value = _interpolate(x[b, ch], p)
                    if mask is not None:
                        value *= float(mask[(b, og * len(taps) + t, *pos)])
                    total += float(w[(oc, ci, *tap)]) * value
            y[(b, oc, *pos)] = total
    return y


def _geometry(in_spatial, kernel, desc) -> list[int]:
    return [(s + desc.pads_begin[a] + desc.pads_end[a] - desc.dilations[a] * (k - 1) - 1) // desc.strides[a] + 1
            for a, (s, k) in enumerate(zip(in_spatial, kernel))]


def _arrays(rng, n, c, o, in_spatial, kernel, desc, bias, mask, spread=1.5):
    out = _geometry(in_spatial, kernel, desc)
    taps = int(np.prod(kernel))
    r = len(in_spatial)
    arrays = [rng.standard_normal((n, c, *in_spatial)).astype(np.float32),
              rng.standard_normal((o, c // desc.groups, *kernel)).astype(np.float32) * 0.5,
              (rng.standard_normal((n, desc.offset_groups * taps * r, *out)) * spread).astype(np.float32)]
    if bias:
        arrays.append(rng.standard_normal(o).astype(np.float32))
    if mask:
        arrays.append(rng.uniform(0, 1, (n, desc.offset_groups * taps, *out)).astype(np.float32))
    return arrays, out


def _spec(arrays, out_shape, desc, dtype=DataType.FLOAT32) -> LayerSpec:
    return LayerSpec(LayerKind.DEFORMABLE_CONVOLUTION, "deform", desc,
                     tuple(TensorInfo(a.shape, dtype) for a in arrays), (TensorInfo(tuple(out_shape), dtype),))


CASES = [
    # (in_spatial, kernel, strides, pads_begin, pads_end, dilations, groups, offset_groups, c, o)
    ((6, 5), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, 1, 2, 3),
    ((7, 6), (2, 3), (2, 1), (0, 1), (1, 0), (1, 2), 2, 2, 4, 4),
    ((5, 5), (3, 2), (1, 2), (2, 0), (0, 1), (2, 1), 1, 2, 2, 2),
    ((9,), (3,), (2,), (1,), (2,), (1,), 1, 1, 3, 2),
    ((4, 4, 3), (2, 2, 2), (1, 1, 1), (0, 1, 0), (1, 0, 0), (1, 1, 1), 1, 1, 2, 2),
]


@pytest.mark.parametrize("bias,mask", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["plain", "bias", "mask", "bias+mask"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0])}-D {c[0]} k{c[1]} s{c[2]} g{c[6]}/{c[7]}")
def test_deformable_convolution(backend, case, bias, mask) -> None:
    in_spatial, kernel, strides, begins, ends, dilations, groups, offset_groups, c, o = case
    desc = DeformableConvolutionDescriptor(strides, begins, ends, dilations, groups, offset_groups, bias, mask)
    rng = np.random.default_rng(hash((case, bias, mask)) % 2 ** 32)
    arrays, out = _arrays(rng, 2, c, o, in_spatial, kernel, desc, bias, mask)
    spec = _spec(arrays, (2, o, *out), desc)
    (y,) = run_layer(backend, spec, arrays)
    expected = deform_reference(arrays[0], arrays[1], arrays[2], arrays[3] if bias else None,
                                arrays[-1] if mask else None, desc)
    assert_close(y, expected, RTOL, ATOL, spec)


def test_zero_offsets_are_a_convolution(backend) -> None:
    rng = np.random.default_rng(4)
    desc = DeformableConvolutionDescriptor((1, 1), (1, 0), (0, 1), (1, 1))
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 3)).astype(np.float32)
    offset = np.zeros((1, 2 * 3 * 2, 5, 4), np.float32)
    spec = _spec([x, w, offset], (1, 3, 5, 4), desc)
    (y,) = run_layer(backend, spec, [x, w, offset])
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 0), (0, 1)))
    expected = np.zeros((1, 3, 5, 4))
    for i, j in np.ndindex(5, 4):
        expected[0, :, i, j] = np.tensordot(w.astype(np.float64), padded[0, :, i:i + 2, j:j + 3], axes=3)
    assert_close(y, expected, RTOL, ATOL, spec)


def test_against_onnx_reference(backend) -> None:
    reference = pytest.importorskip("onnx.reference.ops.op_deform_conv")
    rng = np.random.default_rng(9)
    desc = DeformableConvolutionDescriptor((1, 1), (1, 1), (1, 1), (1, 1), 1, 2, True, True)
    arrays, out = _arrays(rng, 1, 4, 2, (5, 6), (2, 2), desc, True, True, spread=0.7)
    x, w, offset, b, mask = arrays
    expected = reference.DeformConv.eval(x.astype(np.float64), w.astype(np.float64), offset.astype(np.float64),
                                         b.astype(np.float64), mask.astype(np.float64), pads=[1, 1, 1, 1],
                                         offset_group=2)
    spec = _spec(arrays, (1, 2, *out), desc)
    (y,) = run_layer(backend, spec, arrays)
    assert_close(y, expected, RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64], ids=lambda t: t.numpy_name)
def test_float_types(backend, dtype) -> None:
    rng = np.random.default_rng(6)
    desc = DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1), 1, 1, True, True)
    arrays, out = _arrays(rng, 1, 2, 2, (4, 4), (2, 2), desc, True, True, spread=0.5)
    arrays = [a.astype(dtype.numpy_dtype) for a in arrays]
    spec = _spec(arrays, (1, 2, *out), desc, dtype)
    (y,) = run_layer(backend, spec, arrays)
    expected = deform_reference(arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], desc)
    rtol = {DataType.FLOAT16: 3e-3, DataType.BFLOAT16: 3e-2, DataType.FLOAT64: 1e-12}[dtype]
    assert_close(y.astype(np.float64), expected, rtol, rtol * 4, spec)


def test_empty_batch_and_channels(backend) -> None:
    desc = DeformableConvolutionDescriptor((1,), (0,), (0,), (1,))
    for n, o in [(0, 2), (1, 0)]:
        arrays = [np.ones((n, 2, 4), np.float32), np.ones((o, 2, 2), np.float32), np.zeros((n, 2, 3), np.float32)]
        (y,) = run_layer(backend, _spec(arrays, (n, o, 3), desc), arrays)
        assert y.shape == (n, o, 3)


def _infos(shapes, out) -> tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]:
    return tuple(TensorInfo(s, DataType.FLOAT32) for s in shapes), (TensorInfo(out, DataType.FLOAT32),)


D2 = DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1))


@pytest.mark.parametrize("desc,shapes,out,reason", [
    (D2, [(1, 2, 4, 4), (3, 2, 2, 2), (1, 7, 3, 3)], (1, 3, 3, 3), "offset"),
    (D2, [(1, 2, 4, 4), (3, 2, 2, 2), (1, 8, 3, 3)], (1, 3, 3, 2), "output"),
    (DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1), has_mask=True),
     [(1, 2, 4, 4), (3, 2, 2, 2), (1, 8, 3, 3), (1, 3, 3, 3)], (1, 3, 3, 3), "mask"),
    (DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1), has_bias=True),
     [(1, 2, 4, 4), (3, 2, 2, 2), (1, 8, 3, 3), (2,)], (1, 3, 3, 3), "bias"),
    (DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1), groups=2),
     [(1, 2, 4, 4), (3, 1, 2, 2), (1, 8, 3, 3)], (1, 3, 3, 3), "groups"),
    (DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1), offset_groups=3),
     [(1, 2, 4, 4), (3, 2, 2, 2), (1, 24, 3, 3)], (1, 3, 3, 3), "offset_groups"),
    (D2, [(1, 2, 4, 4), (3, 1, 2, 2), (1, 8, 3, 3)], (1, 3, 3, 3), "weights"),
    (D2, [(1, 2, 1, 4), (3, 2, 2, 2), (1, 8, 0, 3)], (1, 3, 0, 3), "window"),
    (D2, [(1, 2, 4, 4), (3, 2, 2, 2)], (1, 3, 3, 3), "input"),
    (D2, [(1, 2, 4), (3, 2, 2), (1, 4, 3)], (1, 3, 3), "rank"),
], ids=["offset channels", "output shape", "mask shape", "bias shape", "groups", "offset_groups", "weights dim 1",
        "window does not fit", "missing offset", "rank"])
def test_malformed_refused(backend, desc, shapes, out, reason) -> None:
    inputs, outputs = _infos(shapes, out)
    assert_refused(backend, LayerSpec(LayerKind.DEFORMABLE_CONVOLUTION, "deform", desc, inputs, outputs), reason)


@pytest.mark.parametrize("field,value,reason", [("groups", 0, "groups"), ("offset_groups", 0, "offset_groups"),
                                                ("strides", (0, 1), "strides"), ("dilations", (1, 0), "dilations")])
def test_malformed_descriptor_refused(backend, field, value, reason) -> None:
    desc = DeformableConvolutionDescriptor((1, 1), (0, 0), (0, 0), (1, 1))
    object.__setattr__(desc, field, value)
    inputs, outputs = _infos([(1, 2, 4, 4), (3, 2, 2, 2), (1, 8, 3, 3)], (1, 3, 3, 3))
    assert_refused(backend, LayerSpec(LayerKind.DEFORMABLE_CONVOLUTION, "deform", desc, inputs, outputs), reason)


def test_mixed_types_refused(backend) -> None:
    inputs = (TensorInfo((1, 2, 4, 4), DataType.FLOAT32), TensorInfo((3, 2, 2, 2), DataType.FLOAT32),
              TensorInfo((1, 8, 3, 3), DataType.FLOAT64))
    spec = LayerSpec(LayerKind.DEFORMABLE_CONVOLUTION, "deform", D2, inputs,
                     (TensorInfo((1, 3, 3, 3), DataType.FLOAT32),))
    assert_refused(backend, spec, "float64")
