"""RESIZE against ONNX's reference implementation of Resize (onnx.reference, float64).

Each case is one ONNX Resize node (mode, coordinate_transformation_mode, nearest_mode,
cubic_coeff_a, exclude_outside, extrapolation_value, antialias; scales or sizes; roi) run by
onnx's ReferenceEvaluator, and the same resize as a RESIZE layer (scales as the reference uses
them: the given ones, or output / input for sizes). The grid: every mode and nearest mode x every
coordinate transform, upsampling and downsampling (integer and fractional factors, to length 1),
antialias, exclude_outside, tf_crop_and_resize with its roi and extrapolation value, ranks 1 to
5, every float type, NEAREST on integer and bool types (copied exactly); then every malformed
layer refused with a reason.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, ResizeDescriptor, ResizeMode
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, run_layer

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def onnx_resize(x: np.ndarray, *, scales: list[float] | None = None, sizes: list[int] | None = None,
                roi: list[float] | None = None, **attributes: Any) -> np.ndarray:
    """ONNX's reference Resize (opset 19) of x."""
    inputs = ["x", "roi" if roi is not None else "", "scales" if scales is not None else ""]
    initializers = []
    if roi is not None:
        initializers.append(helper.make_tensor("roi", TensorProto.FLOAT, [len(roi)], roi))
    if scales is not None:
        initializers.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
    if sizes is not None:
        inputs.append("sizes")
        initializers.append(helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], sizes))
    node = helper.make_node("Resize", inputs, ["y"], **attributes)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", elem, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def descriptor_for(x_shape: tuple[int, ...], *, scales: list[float] | None = None, sizes: list[int] | None = None,
                   roi: list[float] | None = None, mode: str = "nearest",
                   coordinate_transformation_mode: str = "half_pixel", nearest_mode: str = "round_prefer_floor",
                   cubic_coeff_a: float = -0.75, exclude_outside: int = 0, extrapolation_value: float = 0.0,
                   antialias: int = 0) -> tuple[ResizeDescriptor, tuple[int, ...]]:
    """The RESIZE descriptor of an ONNX Resize node and its output shape (ONNX's rules)."""
    rank = len(x_shape)
    if sizes is not None:
        # an empty output axis computes nothing: any scale > 0 describes it
        used = [s / d if s and d else 1.0 for s, d in zip(sizes, x_shape)]
        out = tuple(sizes)
    else:
        used = [float(np.float32(s)) for s in scales]
        out = tuple(int(float(np.float32(s)) * d) for s, d in zip(scales, x_shape))
    roi32 = [float(np.float32(v)) for v in roi] if roi is not None else [0.0] * rank + [1.0] * rank
    desc = ResizeDescriptor(mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, bool(exclude_outside),
                            extrapolation_value, bool(antialias), tuple(used), tuple(roi32[:rank]),
                            tuple(roi32[rank:]))
    return desc, out


def make_spec(desc: ResizeDescriptor, x_shape: tuple[int, ...], out: tuple[int, ...],
              dtype: DataType = DataType.FLOAT32) -> LayerSpec:
    return LayerSpec(LayerKind.RESIZE, "resize", desc, (TensorInfo(x_shape, dtype),), (TensorInfo(out, dtype),))


def check(backend, x: np.ndarray, rtol: float = RTOL, atol: float = ATOL, **node: Any) -> None:
    desc, out = descriptor_for(x.shape, **node)
    spec = make_spec(desc, x.shape, out, DataType.from_any(x.dtype))
    (actual,) = run_layer(backend, spec, [x])
    expected = onnx_resize(x, **node)
    assert expected.shape == out, f"test bug: ONNX gives {expected.shape}, the layer {out}"
    assert_close(actual, expected, rtol, atol, spec)


def data(shape: tuple[int, ...], seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


# scales (as ONNX float32) or sizes of a [1, 2, 4, 5] input: up, down, fractional, to length 1
RESIZES = {
    "up x2": {"scales": [1.0, 1.0, 2.0, 2.0]},
    "up x1.7 x2.4": {"scales": [1.0, 1.0, 1.7, 2.4]},
    "down x0.5": {"scales": [1.0, 1.0, 0.5, 0.5]},
    "down x0.6 x0.35": {"scales": [1.0, 1.0, 0.6, 0.35]},
    "sizes mixed": {"sizes": [1, 2, 7, 3]},
    "sizes to 1": {"sizes": [1, 2, 1, 1]},
}


@pytest.mark.parametrize("resize", RESIZES)
@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
def test_nearest(backend, nearest_mode: str, coordinates: str, resize: str) -> None:
    node = dict(RESIZES[resize], mode="nearest", nearest_mode=nearest_mode,
                coordinate_transformation_mode=coordinates)
    if coordinates == "tf_crop_and_resize":
        node.update(roi=[0, 0, 0.1, 0.3, 1, 1, 0.9, 1.2], extrapolation_value=-7.0)
    check(backend, data((1, 2, 4, 5), 1), **node)


INTERPOLATIONS = {
    "linear": {"mode": "linear"},
    "cubic": {"mode": "cubic"},
    "cubic a=-0.5": {"mode": "cubic", "cubic_coeff_a": -0.5},
    "cubic exclude_outside": {"mode": "cubic", "exclude_outside": 1},
    "linear exclude_outside": {"mode": "linear", "exclude_outside": 1},
}


@pytest.mark.parametrize("resize", RESIZES)
@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("mode", INTERPOLATIONS)
def test_linear_and_cubic(backend, mode: str, coordinates: str, resize: str) -> None:
    node = dict(RESIZES[resize], **INTERPOLATIONS[mode], coordinate_transformation_mode=coordinates)
    if coordinates == "tf_crop_and_resize":
        node.update(roi=[0, 0, -0.2, 0.25, 1, 1, 0.8, 1.3], extrapolation_value=2.5)
    check(backend, data((1, 2, 4, 5), 2), **node)


ANTIALIAS = {
    "linear x0.5": ("linear", [1.0, 1.0, 0.5, 0.5]),
    "linear x0.3 x0.6": ("linear", [1.0, 1.0, 0.3, 0.6]),
    "cubic x0.5": ("cubic", [1.0, 1.0, 0.5, 0.5]),
    "cubic x0.25 x0.7": ("cubic", [1.0, 1.0, 0.25, 0.7]),
    "linear up x2 (no effect)": ("linear", [1.0, 1.0, 2.0, 2.0]),
    "cubic mixed up and down": ("cubic", [1.0, 1.0, 1.5, 0.4]),
}


@pytest.mark.parametrize("case", ANTIALIAS)
@pytest.mark.parametrize("coordinates", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
def test_antialias(backend, coordinates: str, case: str) -> None:
    mode, scales = ANTIALIAS[case]
    check(backend, data((1, 2, 12, 10), 3), mode=mode, scales=scales, antialias=1,
          coordinate_transformation_mode=coordinates)


def test_antialias_with_exclude_outside_and_crop(backend) -> None:
    check(backend, data((1, 1, 16, 9), 4), mode="cubic", sizes=[1, 1, 5, 4], antialias=1, exclude_outside=1,
          coordinate_transformation_mode="tf_crop_and_resize", roi=[0, 0, 0.1, -0.1, 1, 1, 0.7, 1.1],
          extrapolation_value=1.0)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("shape,sizes", [((7,), [12]), ((3, 4), [5, 2]), ((2, 3, 4), [3, 2, 6]),
                                         ((2, 3, 3, 4, 2), [1, 5, 2, 6, 3])], ids=["1d", "2d", "3d", "5d"])
def test_every_rank_and_every_axis(backend, mode: str, shape: tuple[int, ...], sizes: list[int]) -> None:
    """Every axis resized, the batch and channel axes too."""
    check(backend, data(shape, 5), mode=mode, sizes=sizes, coordinate_transformation_mode="half_pixel")


def test_identity_axes_and_empty_output(backend) -> None:
    check(backend, data((2, 3, 4), 6), mode="cubic", scales=[1.0, 1.0, 1.0])
    desc, out = descriptor_for((2, 3, 4), sizes=[2, 0, 4], mode="linear")
    (actual,) = run_layer(backend, make_spec(desc, (2, 3, 4), out), [data((2, 3, 4))])
    assert actual.shape == (2, 0, 4)


FLOAT_TOLERANCES = {DataType.FLOAT64: 1e-12, DataType.FLOAT16: 2e-3, DataType.BFLOAT16: 1.6e-2}


@pytest.mark.parametrize("dtype", list(FLOAT_TOLERANCES), ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_every_float_type(backend, mode: str, dtype: DataType) -> None:
    x = data((1, 2, 5, 4), 7, np.float64).astype(dtype.numpy_dtype)
    node = {"mode": mode, "scales": [1.0, 1.0, 1.6, 0.75]}
    desc, out = descriptor_for(x.shape, **node)
    spec = make_spec(desc, x.shape, out, dtype)
    (actual,) = run_layer(backend, spec, [x])
    # the reference in float64 from the same (representable) values
    expected = onnx_resize(x.astype(np.float64), **node)
    tol = FLOAT_TOLERANCES[dtype]
    if dtype is DataType.FLOAT64 and mode == "cubic":
        tol = 2e-6  # the reference computes cubic weights in float32 (cubic_coeff_a is a float32 attribute)
    assert_close(actual, expected, tol, tol, spec)


INTEGERS = [DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32,
            DataType.INT64, DataType.UINT64, DataType.BOOL]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # run_layer's NaN fill of an int output
@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda t: t.numpy_name)
def test_nearest_copies_every_type_exactly(backend, dtype: DataType) -> None:
    np_type = dtype.numpy_dtype
    if dtype is DataType.BOOL:
        x = np.random.default_rng(8).integers(0, 2, (2, 3, 4)).astype(bool)
    else:
        info = np.iinfo(np_type)
        x = np.random.default_rng(8).integers(info.min, info.max, (2, 3, 4), dtype=np_type, endpoint=True)
        x.reshape(-1)[:2] = (info.min, info.max)
    for nearest_mode, coordinates in itertools.product(NEAREST_MODES, COORDINATES[:-1]):
        node = {"mode": "nearest", "nearest_mode": nearest_mode, "coordinate_transformation_mode": coordinates,
                "scales": [1.0, 1.5, 0.6]}
        desc, out = descriptor_for(x.shape, **node)
        spec = make_spec(desc, x.shape, out, dtype)
        (actual,) = run_layer(backend, spec, [x])
        # which element each output takes, from the reference run on the indices (exact)
        picked = onnx_resize(np.arange(x.size, dtype=np.float64).reshape(x.shape), **node).astype(np.int64)
        assert actual.dtype == x.dtype
        np.testing.assert_array_equal(actual, x.reshape(-1)[picked], err_msg=f"{nearest_mode}, {coordinates}")


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
def test_nearest_extrapolation_value_on_integers(backend) -> None:
    x = np.arange(12, dtype=np.int32).reshape(1, 3, 4)
    node = {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [1, 4, 6],
            "roi": [0, -0.5, 0.2, 1, 1.5, 0.9], "extrapolation_value": -3.0}
    desc, out = descriptor_for(x.shape, **node)
    (actual,) = run_layer(backend, make_spec(desc, x.shape, out, DataType.INT32), [x])
    np.testing.assert_array_equal(actual, onnx_resize(x, **node))
    assert (actual == -3).any()


# ---- malformed layers ---------------------------------------------------------------------------


def _broken(desc: ResizeDescriptor, **fields: object) -> ResizeDescriptor:
    copy = dataclasses.replace(desc)
    for key, value in fields.items():
        object.__setattr__(copy, key, value)
    return copy


NEAREST, OUT = descriptor_for((1, 2, 4), scales=[1.0, 1.0, 2.0])
CUBIC, _ = descriptor_for((1, 2, 4), scales=[1.0, 1.0, 2.0], mode="cubic")


def _spec(desc: ResizeDescriptor, dtype: DataType = DataType.FLOAT32, x: tuple[int, ...] = (1, 2, 4),
          out: tuple[int, ...] = OUT) -> LayerSpec:
    return make_spec(desc, x, out, dtype)


MALFORMED = {
    "unknown mode": (lambda: _spec(_broken(NEAREST, mode=4)), r"unknown mode 4"),
    "unknown coordinates": (lambda: _spec(_broken(NEAREST, coordinates=7)), r"unknown coordinate transform 7"),
    "unknown nearest mode": (lambda: _spec(_broken(NEAREST, nearest_mode=0)), r"unknown nearest mode 0"),
    "antialias nearest": (lambda: _spec(_broken(NEAREST, antialias=True)), r"antialias applies to LINEAR and CUBIC"),
    "exclude_outside 2": (lambda: _spec(_broken(CUBIC, exclude_outside=2)), r"must be 0 or 1"),
    "cubic a NaN": (lambda: _spec(_broken(CUBIC, cubic_coeff_a=float("nan"))), r"cubic_coeff_a must be finite"),
    "scale 0": (lambda: _spec(_broken(NEAREST, scales=(1.0, 0.0, 2.0))), r"scales\[1\] must be finite and > 0"),
    "scale inf": (lambda: _spec(_broken(CUBIC, scales=(1.0, 1.0, float("inf")))), r"scales\[2\] must be finite"),
    "roi NaN": (lambda: _spec(_broken(_broken(CUBIC, coordinates="tf_crop_and_resize"),
                                      roi_end=(1.0, float("nan"), 1.0))), r"roi of axis 1 must be finite"),
    "rank 0": (lambda: _spec(_broken(NEAREST, scales=(), roi_start=(), roi_end=())), r"rank must be 1"),
    "descriptor rank differs from x": (lambda: _spec(NEAREST, x=(2, 4), out=(2, 8)), r"rank is 3, the input's 2"),
    "output rank differs": (lambda: _spec(NEAREST, out=(1, 2, 8, 1)), r"the output's 4"),
    "resizing an empty axis": (lambda: _spec(NEAREST, x=(1, 0, 4), out=(1, 2, 8)),
                               r"axis 1 of the input is empty"),
    "linear on integers": (lambda: _spec(_broken(NEAREST, mode=ResizeMode.LINEAR), DataType.INT32), r"float"),
    "cubic on bool": (lambda: _spec(CUBIC, DataType.BOOL), r"float"),
    "output of another type": (lambda: dataclasses.replace(_spec(NEAREST), outputs=(TensorInfo(OUT, DataType.INT8),)),
                               r"output 0 is int8"),
    "two inputs": (lambda: dataclasses.replace(_spec(NEAREST), inputs=(TensorInfo((1, 2, 4)),) * 2), r"input"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_layer_is_refused(backend, name: str) -> None:
    make, reason = MALFORMED[name]
    assert_refused(backend, make(), reason)


def test_extrapolation_value_is_a_float32(backend) -> None:
    """The descriptor carries extrapolation_value as float32, as ONNX's attribute is."""
    x = data((1, 1, 3, 3), 9)
    node = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [1, 1, 4, 4],
            "roi": [0, 0, -1.0, -1.0, 1, 1, 2.0, 2.0], "extrapolation_value": 0.1}
    desc, out = descriptor_for(x.shape, **node)
    (actual,) = run_layer(backend, make_spec(desc, x.shape, out), [x])
    assert actual[0, 0, 0, 0] == np.float32(f32(0.1))
