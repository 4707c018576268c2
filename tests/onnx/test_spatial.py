"""ONNX Conv, ConvTranspose, the pools, Resize and Upsample import: every attribute over the
opsets, against onnxruntime on CpuRef (and ONNX's reference where onnxruntime departs from the
ONNX specification); then the import errors, which name node, operator and attribute."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from onnx import TensorProto, defs, helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.descriptors import LayerKind
from plugnn.errors import ModelError

NEWEST = min(defs.onnx_opset_version(), 22)  # the newest onnxruntime runs here
TOL = 2e-5


def single(op: str, x_shape: tuple[int, ...], inits: dict[str, np.ndarray] | None = None, *, inputs: tuple[str, ...] = (),
           opset: int = NEWEST, x_type: int = TensorProto.FLOAT, outputs: tuple[str, ...] = ("Y",), seed: int = 0,
           **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """One `op` node named 'node' reading X (a graph input) then `inputs` (initializers or '')."""
    node = helper.make_node(op, ["X", *inputs], list(outputs), name="node", **attrs)
    model = make_model([node], {"X": (list(x_shape), x_type)}, [o for o in outputs if o], inits or {}, opset=opset)
    rng = np.random.default_rng(seed)
    if x_type == TensorProto.FLOAT:
        x = rng.standard_normal(x_shape).astype(np.float32)
    else:
        dtype = helper.tensor_dtype_to_np_dtype(x_type)
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, x_shape, dtype=dtype, endpoint=True)
    return model, {"X": x}


def check_ort(runtime: Any, model: Any, feeds: dict[str, np.ndarray], tol: float = TOL) -> None:
    got, want = run_plugnn(runtime, model, feeds), run_ort(model, feeds)
    for name, expected in want.items():
        assert got[name].shape == expected.shape, (name, got[name].shape, expected.shape)
        np.testing.assert_allclose(got[name], expected, rtol=tol, atol=tol, err_msg=name)


def check_reference(runtime: Any, model: Any, feeds: dict[str, np.ndarray], tol: float = TOL) -> None:
    got = run_plugnn(runtime, model, feeds)
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_allclose(got["Y"], expected, rtol=tol, atol=tol)


def kinds(model: Any) -> list[LayerKind]:
    return [layer.kind for layer in plugnn.onnx.load(model).layers if isinstance(layer.kind, LayerKind)]


def weights(*shape: int, seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(np.float32)


# ---- Conv ------------------------------------------------------------------------------------

CONVS = {
    "1d": ((2, 3, 11), (4, 3, 3), {"pads": [1, 2], "strides": [2]}),
    "1d dilated group": ((1, 4, 12), (6, 2, 3), {"group": 2, "dilations": [2]}),
    "1d same_lower": ((1, 2, 9), (3, 2, 4), {"auto_pad": "SAME_LOWER", "strides": [2]}),
    "2d same_upper": ((1, 2, 7, 6), (3, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "3d": ((1, 2, 5, 6, 4), (3, 2, 3, 3, 2), {"pads": [1, 0, 1, 1, 2, 0], "strides": [1, 2, 1]}),
    "3d valid depthwise": ((2, 3, 4, 5, 6), (3, 1, 2, 2, 3), {"auto_pad": "VALID", "group": 3,
                                                              "kernel_shape": [2, 2, 3]}),
}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("opset", sorted({7, 11, NEWEST}))
def test_conv(runtime, opset: int, name: str, bias: bool) -> None:
    x, w, attrs = CONVS[name]
    inits = {"W": weights(*w)} | ({"B": weights(w[0], seed=2)} if bias else {})
    model, feeds = single("Conv", x, inits, inputs=tuple(inits), opset=opset, **attrs)
    check_ort(runtime, model, feeds)


def test_conv_maps_1d_and_3d_onto_convolution_and_2d_onto_convolution_2d() -> None:
    for name, kind in (("1d", LayerKind.CONVOLUTION), ("2d same_upper", LayerKind.CONVOLUTION_2D),
                       ("3d", LayerKind.CONVOLUTION)):
        x, w, attrs = CONVS[name]
        model, _ = single("Conv", x, {"W": weights(*w)}, inputs=("W",), **attrs)
        assert kind in kinds(model), name


def test_conv_weights_at_run_time(runtime) -> None:
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="node", pads=[1, 1, 1, 1, 1, 1])
    model = make_model([node], {"X": [1, 2, 3, 4, 5], "W": [2, 2, 3, 3, 3]}, ["Y"])
    feeds = {"X": weights(1, 2, 3, 4, 5), "W": weights(2, 2, 3, 3, 3, seed=3)}
    check_ort(runtime, model, feeds)


# ---- ConvTranspose ------------------------------------------------------------------------------

TRANSPOSES = {
    "1d": ((1, 3, 5), (3, 2, 3), {"strides": [2]}),
    "1d pads output_padding": ((2, 2, 6), (2, 3, 4), {"strides": [3], "pads": [1, 2], "output_padding": [1]}),
    "2d unet": ((1, 4, 5, 6), (4, 2, 2, 2), {"strides": [2, 2]}),
    "2d group dilated": ((1, 4, 3, 4), (4, 3, 3, 2), {"group": 2, "dilations": [2, 1], "strides": [1, 2]}),
    "2d output_shape smaller": ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [2, 2], "output_shape": [5, 3]}),
    "2d output_shape larger": ((1, 1, 3, 3), (1, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    "2d same_upper": ((1, 2, 4, 3), (2, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "2d same_lower": ((1, 2, 4, 3), (2, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "2d valid": ((1, 2, 4, 3), (2, 1, 3, 2), {"auto_pad": "VALID", "kernel_shape": [3, 2]}),
    "3d": ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 0, 1]}),
}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("name", TRANSPOSES)
@pytest.mark.parametrize("opset", sorted({7, 11, NEWEST}))
def test_conv_transpose(runtime, opset: int, name: str, bias: bool) -> None:
    x, w, attrs = TRANSPOSES[name]
    inits = {"W": weights(*w)} | ({"B": weights(w[1] * attrs.get("group", 1), seed=2)} if bias else {})
    model, feeds = single("ConvTranspose", x, inits, inputs=tuple(inits), opset=opset, **attrs)
    check_ort(runtime, model, feeds)


def test_conv_transpose_output_shape_splits_pads_as_onnx_says(runtime) -> None:
    """total padding 3 (full 7 -> 4): SAME_UPPER crops 1 first, the others 2 first, as the ONNX
    specification says (onnxruntime crops 1 first for NOTSET too; ONNX's reference crops from the
    end only), checked against np.convolve, the full transposed convolution of one channel."""
    for auto_pad, begin in (("SAME_UPPER", 1), ("NOTSET", 2), ("SAME_LOWER", 2)):
        node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], name="node", output_shape=[4],
                                **({"auto_pad": auto_pad} if auto_pad != "NOTSET" else {}))
        w = np.ones((1, 1, 3), np.float32)
        model = make_model([node], {"X": [1, 1, 5]}, ["Y"], {"W": w})
        x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
        got = run_plugnn(runtime, model, {"X": x})["Y"]
        full = np.convolve(x[0, 0], w[0, 0])  # 7 values
        np.testing.assert_allclose(got[0, 0], full[begin:begin + 4], err_msg=auto_pad)


# ---- pools ----------------------------------------------------------------------------------------

POOLS = {
    "MaxPool 1d": ("MaxPool", (1, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    "MaxPool 3d ceil dilated": ("MaxPool", (1, 2, 6, 7, 5), {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1],
                                                             "dilations": [1, 1, 2], "ceil_mode": 1}),
    "MaxPool 3d same_upper": ("MaxPool", (2, 1, 5, 5, 5), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2],
                                                           "auto_pad": "SAME_UPPER"}),
    "MaxPool storage_order 1": ("MaxPool", (1, 2, 5, 5), {"kernel_shape": [2, 2], "storage_order": 1}),
    "AveragePool 3d include": ("AveragePool", (1, 2, 5, 6, 7), {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1],
                                                                "count_include_pad": 1, "strides": [2, 2, 2]}),
    "AveragePool 3d exclude ceil": ("AveragePool", (1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 3], "ceil_mode": 1,
                                                                     "pads": [0, 1, 1, 1, 0, 1], "strides": [2, 2, 3]}),
    "AveragePool 3d same_lower": ("AveragePool", (1, 1, 6, 5, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2],
                                                                   "auto_pad": "SAME_LOWER"}),
    "LpPool 3d": ("LpPool", (1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 3], "p": 3, "strides": [1, 2, 2]}),
    "LpPool 1d": ("LpPool", (1, 2, 8), {"kernel_shape": [3], "p": 1}),
}


@pytest.mark.parametrize("name", POOLS)
@pytest.mark.parametrize("opset", sorted({8, 11, NEWEST}))
def test_pool(runtime, opset: int, name: str) -> None:
    op, x, attrs = POOLS[name]
    attrs = dict(attrs)
    if opset < 10:
        attrs.pop("ceil_mode", None)
    if opset < 11:
        attrs.pop("dilations", None)
    if op == "LpPool" and opset < 11:
        return  # LpPool-2's p is a float on int data types... covered at 11 and later
    model, feeds = single(op, x, opset=opset, **attrs)
    check_ort(runtime, model, feeds, 1e-4)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("x_type", [TensorProto.INT8, TensorProto.UINT8])
def test_integer_max_pool_maps_onto_pooling(runtime, x_type: int, rank: int) -> None:
    model, feeds = single("MaxPool", (1, 2, *([6] * rank)), x_type=x_type, kernel_shape=[3] * rank,
                          strides=[2] * rank, pads=[1] * (2 * rank))
    assert LayerKind.POOLING in kinds(model)
    got, want = run_plugnn(runtime, model, feeds)["Y"], run_ort(model, feeds)["Y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


GLOBAL = {
    "GlobalAveragePool": lambda v: v.mean(axis=-1),
    "GlobalMaxPool": lambda v: v.max(axis=-1),
    "GlobalLpPool": lambda v: (np.abs(v) ** 3).sum(axis=-1) ** (1 / 3),
}


@pytest.mark.parametrize("op", list(GLOBAL))
@pytest.mark.parametrize("x", [(2, 3, 7), (1, 2, 4, 5), (1, 2, 3, 4, 5), (1, 2, 2, 3, 2, 2)], ids=str)
def test_global_pools_of_any_rank(runtime, op: str, x: tuple[int, ...]) -> None:
    """Against NumPy over the flattened spatial axes (onnxruntime runs these for rank <= 5 and not
    GlobalLpPool; ONNX's reference has no GlobalLpPool)."""
    model, feeds = single(op, x, **({"p": 3} if op == "GlobalLpPool" else {}))
    got = run_plugnn(runtime, model, feeds)["Y"]
    flat = feeds["X"].astype(np.float64).reshape(*x[:2], -1)
    expected = GLOBAL[op](flat).reshape(*x[:2], *([1] * (len(x) - 2)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---- Resize and Upsample ------------------------------------------------------------------------


def resize_model(x_shape: tuple[int, ...], *, opset: int, scales: list[float] | None = None,
                 sizes: list[int] | None = None, roi: list[float] | None = None, x_type: int = TensorProto.FLOAT,
                 **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    inits: dict[str, np.ndarray] = {}
    if opset < 11:
        inits["scales"] = np.asarray(scales, np.float32)
        inputs: tuple[str, ...] = ("scales",)
    else:
        roi_name = ""
        if roi is not None:
            inits["roi"] = np.asarray(roi, np.float32)
            roi_name = "roi"
        elif opset < 13:
            inits["roi"] = np.zeros(0, np.float32)
            roi_name = "roi"
        scales_name = ""
        if scales is not None:
            inits["scales"] = np.asarray(scales, np.float32)
            scales_name = "scales"
        elif opset < 13:
            inits["scales"] = np.zeros(0, np.float32)
            scales_name = "scales"
        inputs = (roi_name, scales_name) + (("sizes",) if sizes is not None else ())
        if sizes is not None:
            inits["sizes"] = np.asarray(sizes, np.int64)
    return single("Resize", x_shape, inits, inputs=inputs, opset=opset, x_type=x_type, **attrs)


RESIZES_11 = {
    "nearest half_pixel round_prefer_ceil": {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                                             "scales": [1, 1, 1.7, 2.3]},
    "nearest asymmetric floor down": {"mode": "nearest", "nearest_mode": "floor",
                                      "coordinate_transformation_mode": "asymmetric", "scales": [1, 1, 0.6, 0.5]},
    "nearest align_corners ceil sizes": {"mode": "nearest", "nearest_mode": "ceil",
                                         "coordinate_transformation_mode": "align_corners", "sizes": [1, 2, 9, 3]},
    "linear half_pixel": {"mode": "linear", "scales": [1, 1, 2.0, 1.5]},
    "linear pytorch_half_pixel sizes": {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
                                        "sizes": [1, 2, 1, 9]},
    "linear align_corners down": {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                  "scales": [1, 1, 0.5, 0.7]},
    "cubic half_pixel": {"mode": "cubic", "scales": [1, 1, 1.6, 0.8]},
    "cubic asymmetric a=-0.5 exclude_outside": {"mode": "cubic", "coordinate_transformation_mode": "asymmetric",
                                                "cubic_coeff_a": -0.5, "exclude_outside": 1, "sizes": [1, 2, 7, 4]},
    "linear tf_crop_and_resize": {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                  "roi": [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], "extrapolation_value": 3.0,
                                  "sizes": [1, 2, 4, 6]},
    "every axis": {"mode": "linear", "sizes": [2, 3, 3, 7]},
}


# Where onnxruntime departs from ONNX's definition (its reference): align_corners with a scale
# whose output length scale * in is not an integer (onnxruntime divides by the integer output
# length), tf_crop_and_resize of a 4-D linear resize, and linear resizing of every axis (which
# onnxruntime refuses).
REFERENCE_ONLY = {"linear align_corners down", "linear tf_crop_and_resize", "every axis"}


@pytest.mark.parametrize("name", RESIZES_11)
@pytest.mark.parametrize("opset", sorted({11, 13, 18, NEWEST}))
def test_resize(runtime, opset: int, name: str) -> None:
    attrs = dict(RESIZES_11[name])
    model, feeds = resize_model((1, 2, 5, 6), opset=opset, **attrs)
    if name in REFERENCE_ONLY:
        check_reference(runtime, model, feeds, 1e-5)
    else:
        check_ort(runtime, model, feeds, 1e-4)


RESIZES_18 = {
    "axes and sizes": {"mode": "linear", "axes": [3, 2], "sizes": [9, 2]},
    "negative axes and scales": {"mode": "nearest", "axes": [-1], "scales": [2.5]},
    "not_larger": {"mode": "nearest", "sizes": [1, 2, 9, 9], "keep_aspect_ratio_policy": "not_larger"},
    "not_smaller": {"mode": "linear", "axes": [2, 3], "sizes": [9, 9], "keep_aspect_ratio_policy": "not_smaller"},
    "antialias linear": {"mode": "linear", "antialias": 1, "scales": [1, 1, 0.4, 0.5]},
    "antialias cubic sizes": {"mode": "cubic", "antialias": 1, "sizes": [1, 2, 3, 2]},
    "tf_crop_and_resize axes": {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                "axes": [2, 3], "roi": [0.1, 0.2, 0.8, 0.7], "sizes": [3, 4]},
}


@pytest.mark.parametrize("name", RESIZES_18)
@pytest.mark.parametrize("opset", sorted({18, NEWEST}))
def test_resize_18(runtime, opset: int, name: str) -> None:
    model, feeds = resize_model((1, 2, 5, 6), opset=opset, **RESIZES_18[name])
    check_ort(runtime, model, feeds, 1e-4)


def test_resize_half_pixel_symmetric_19(runtime) -> None:
    for mode in ("nearest", "linear", "cubic"):
        model, feeds = resize_model((1, 2, 5, 6), opset=19, mode=mode, scales=[1, 1, 1.7, 0.55],
                                    coordinate_transformation_mode="half_pixel_symmetric")
        check_ort(runtime, model, feeds, 1e-4)


@pytest.mark.parametrize("x_type", [TensorProto.UINT8, TensorProto.INT32])  # onnxruntime's integer Resizes
def test_resize_nearest_of_integers(runtime, x_type: int) -> None:
    model, feeds = resize_model((1, 2, 5, 6), opset=NEWEST, x_type=x_type, mode="nearest", scales=[1, 1, 1.5, 0.5])
    got, want = run_plugnn(runtime, model, feeds)["Y"], run_ort(model, feeds)["Y"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.6, 0.5], [1, 1, 1.5, 0.6], [1, 1, 2.5, 1]], ids=str)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10(runtime, mode: str, scales: list[float]) -> None:
    model, feeds = resize_model((1, 2, 5, 6), opset=10, mode=mode, scales=scales)
    check_ort(runtime, model, feeds, 1e-4)


def test_resize_10_nearest_that_grows_and_shrinks_is_two_layers() -> None:
    model, _ = resize_model((1, 2, 5, 6), opset=10, mode="nearest", scales=[1, 1, 1.5, 0.6])
    assert kinds(model).count(LayerKind.RESIZE) == 2


@pytest.mark.parametrize("scales", [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 1.5, 2.5], [1.0, 2.0, 1.0, 3.0]], ids=str)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("opset", [7, 9])
def test_upsample(runtime, opset: int, mode: str, scales: list[float]) -> None:

    if opset == 7:
        model, feeds = single("Upsample", (1, 2, 3, 4), opset=7, mode=mode, scales=scales)
    else:
        model, feeds = single("Upsample", (1, 2, 3, 4), {"scales": np.asarray(scales, np.float32)},
                              inputs=("scales",), opset=9, mode=mode)
    if mode == "nearest" or scales[1] == 1:
        check_ort(runtime, model, feeds, 1e-4)
        return
    # onnxruntime's linear Upsample of a 4-D input keeps N and C, and ONNX's reference Upsample
    # is nearest-only: the oracle is ONNX's reference Resize with Upsample's asymmetric coordinates
    twin, _ = resize_model((1, 2, 3, 4), opset=19, mode="linear", scales=scales,
                           coordinate_transformation_mode="asymmetric")
    (expected,) = ReferenceEvaluator(twin).run(None, feeds)
    np.testing.assert_allclose(run_plugnn(runtime, model, feeds)["Y"], expected, rtol=1e-5, atol=1e-5)


def test_resize_sizes_from_a_shape_chain(runtime) -> None:
    """sizes = Shape(X)[2:] * 2 concatenated after [N, C]: folded at import."""
    nodes = [
        helper.make_node("Shape", ["X"], ["shape"]),
        helper.make_node("Slice", ["shape", "start", "end"], ["hw"]),
        helper.make_node("Mul", ["hw", "two"], ["hw2"]),
        helper.make_node("Slice", ["shape", "zero", "start"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw2"], ["sizes"], axis=0),
        helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], name="node", mode="linear"),
    ]
    inits = {"start": np.array([2], np.int64), "end": np.array([4], np.int64), "two": np.array([2], np.int64),
             "zero": np.array([0], np.int64)}
    model = make_model(nodes, {"X": [1, 3, 4, 5]}, ["Y"], inits, opset=13)
    check_ort(runtime, model, {"X": weights(1, 3, 4, 5)}, 1e-4)


# ---- import errors ---------------------------------------------------------------------------------


def import_error(model: Any) -> str:
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(model)
    message = str(info.value)
    assert "node 'node'" in message, message
    return message


def _conv(**attrs: Any) -> Any:
    return single("Conv", (1, 2, 5, 5, 5), {"W": weights(3, 2, 3, 3, 3)}, inputs=("W",), **attrs)[0]


def _transpose(**attrs: Any) -> Any:
    return single("ConvTranspose", (1, 2, 4), {"W": weights(2, 3, 3)}, inputs=("W",), **attrs)[0]


def _resize(opset: int = NEWEST, **kwargs: Any) -> Any:
    return resize_model((1, 2, 4, 4), opset=opset, **kwargs)[0]


ERRORS = {
    "conv rank 6": (lambda: single("Conv", (1, 1, 2, 2, 2, 2), {"W": weights(1, 1, 1, 1, 1, 1)}, inputs=("W",))[0],
                    r"Conv\): X input has rank 6; plugnn imports 1-D, 2-D and 3-D Conv"),
    "conv kernel_shape": (lambda: _conv(kernel_shape=[3, 3, 2]), r"attribute 'kernel_shape' = \[3, 3, 2\] is not "
                          r"supported; supported: the weights' spatial shape \[3, 3, 3\]"),
    "conv weights rank": (lambda: single("Conv", (1, 2, 5, 5, 5), {"W": weights(3, 2, 3, 3)}, inputs=("W",))[0],
                          r"weights W have shape \[3, 2, 3, 3\]; expected rank 5 for a 3-D Conv"),
    "conv group 0": (lambda: _conv(group=0), r"attribute 'group' = 0 is not supported"),
    "conv strides": (lambda: _conv(strides=[1, 1]), r"attribute 'strides' = \[1, 1\] is not supported"),
    "conv auto_pad": (lambda: _conv(auto_pad="SAME"), r"attribute 'auto_pad' = 'SAME' is not supported"),
    "conv group mismatch": (lambda: _conv(group=2), r"Convolution|groups"),
    "transpose output_padding": (lambda: _transpose(output_padding=[-1]),
                                 r"attribute 'output_padding' = \[-1\] is not supported"),
    "transpose output_shape": (lambda: _transpose(output_shape=[2, 3]),
                               r"attribute 'output_shape' = \[2, 3\] is not supported"),
    "transpose pads with same": (lambda: _transpose(auto_pad="SAME_UPPER", pads=[1, 1]),
                                 r"attribute 'pads' cannot be combined with auto_pad=SAME_UPPER"),
    "transpose W channels": (lambda: single("ConvTranspose", (1, 3, 4), {"W": weights(2, 3, 3)}, inputs=("W",))[0],
                             r"a ConvTranspose's W is \[C, M / group, k...\] with C = 3"),
    "maxpool storage_order 2": (lambda: single("MaxPool", (1, 1, 4, 4), kernel_shape=[2, 2], storage_order=2)[0],
                                r"attribute 'storage_order' = 2 is not supported"),
    "pool kernel rank": (lambda: single("AveragePool", (1, 1, 4, 4, 4), kernel_shape=[2, 2])[0],
                         r"attribute 'kernel_shape' = \[2, 2\] is not supported; supported: 3 integers"),
    "pool without kernel": (lambda: single("MaxPool", (1, 1, 4, 4, 4))[0], r"attribute 'kernel_shape' is required"),
    "lppool p 0": (lambda: single("LpPool", (1, 1, 4, 4, 4), kernel_shape=[2, 2, 2], p=0)[0],
                   r"attribute 'p' = 0 is not supported"),
    "global lp p": (lambda: single("GlobalLpPool", (1, 1, 4, 4), p=-1)[0], r"attribute 'p' = -1 is not supported"),
    "global rank 2": (lambda: single("GlobalMaxPool", (1, 4))[0], r"global pooling needs rank >= 3"),
    "resize mode": (lambda: _resize(mode="area", scales=[1, 1, 2, 2]), r"attribute 'mode' = 'area' is not supported"),
    "resize coordinates": (lambda: _resize(mode="linear", coordinate_transformation_mode="center",
                                           scales=[1, 1, 2, 2]),
                           r"attribute 'coordinate_transformation_mode' = 'center' is not supported"),
    "resize nearest_mode": (lambda: _resize(nearest_mode="round", scales=[1, 1, 2, 2]),
                            r"attribute 'nearest_mode' = 'round' is not supported"),
    "resize both scales and sizes": (lambda: _resize(scales=[1, 1, 2, 2], sizes=[1, 2, 8, 8]),
                                     r"exactly one of input 2 \(scales\) and input 3 \(sizes\)"),
    "resize neither": (lambda: _resize(opset=11), r"exactly one of input 2 \(scales\) and input 3 \(sizes\)"),
    "resize scale 0": (lambda: _resize(scales=[1, 1, 0, 2]), r"input 2 \(scales\) = \[1.0, 1.0, 0.0, 2.0\]: expected 4 "
                       r"finite numbers > 0"),
    "resize sizes count": (lambda: _resize(sizes=[8, 8]), r"input 3 \(sizes\) = \[8, 8\]: expected 4 integers"),
    "resize tf_crop without roi": (lambda: _resize(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                                   sizes=[1, 2, 3, 3]), r"needs input 1 \(roi\)"),
    "resize axes": (lambda: _resize(axes=[2, 2], scales=[2, 2]), r"attribute 'axes' = \[2, 2\] is not supported"),
    "resize axes before 18": (lambda: _resize(opset=13, axes=[2, 3], scales=[2, 2]),
                              r"attribute 'axes' exists from opset 18; the model's opset is 13"),
    "resize antialias before 18": (lambda: _resize(opset=13, antialias=1, mode="linear", scales=[1, 1, 0.5, 0.5]),
                                   r"attribute 'antialias' exists from opset 18"),
    "resize half_pixel_symmetric before 19": (
        lambda: _resize(opset=18, coordinate_transformation_mode="half_pixel_symmetric", scales=[1, 1, 2, 2]),
        r"'half_pixel_symmetric' exists from opset 19"),
    "resize policy": (lambda: _resize(sizes=[1, 2, 8, 8], keep_aspect_ratio_policy="fit"),
                      r"attribute 'keep_aspect_ratio_policy' = 'fit' is not supported"),
    "resize 10 cubic": (lambda: _resize(opset=10, mode="cubic", scales=[1, 1, 2, 2]),
                        r"attribute 'mode' = 'cubic' is not supported; supported: nearest, linear"),
    "resize 10 nearest_mode": (lambda: _resize(opset=10, nearest_mode="floor", scales=[1, 1, 2, 2]),
                               r"attribute 'nearest_mode' exists from opset 11"),
    "resize linear of integers": (lambda: _resize(mode="linear", x_type=TensorProto.INT32, scales=[1, 1, 2, 2]),
                                  r"linear resize takes float tensors"),
    "upsample shrinking": (lambda: single("Upsample", (1, 1, 4, 4), opset=7, scales=[1, 1, 0.5, 1])[0],
                           r"Upsample's scales are >= 1"),
    "upsample 9 attribute": (lambda: single("Upsample", (1, 1, 4, 4), opset=9, scales=[1, 1, 2, 2])[0],
                             r"attribute 'scales' became input 1 in opset 9"),
    "upsample without scales": (lambda: single("Upsample", (1, 1, 4, 4), opset=7)[0],
                                r"attribute 'scales' is required"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_node_operator_and_attribute(name: str) -> None:
    make, pattern = ERRORS[name]
    message = import_error(make())
    assert re.search(pattern, message), message


def test_resize_scales_at_run_time_are_refused() -> None:
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], name="node")
    model = make_model([node], {"X": [1, 1, 2, 2], "scales": [4]}, ["Y"], opset=13)
    message = import_error(model)
    assert "input 2 (scales) 'scales' must be known at import time" in message
