"""ONNX import of GridSample, RoiAlign, DeformConv, DFT, STFT, MelWeightMatrix, Einsum, Col2Im,
MaxUnpool, ReverseSequence, TensorScatter, Det, BitCast and TfIdfVectorizer against ONNX's
reference implementation (onnx.reference), at every opset each exists in, with inputs computed at
run time and (the NumPy folds) known at import; and their import errors, which name node,
operator and attribute.

Tolerances: rtol 1e-5, atol 1e-5 unless a case says otherwise (GridSample, RoiAlign and
DeformConv compare with a reference that keeps coordinates in float32: 1e-4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_plugnn
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError

N = helper.make_node
F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def _typed(value: np.ndarray) -> Any:
    return (list(value.shape), helper.np_dtype_to_tensor_dtype(value.dtype))


def check(runtime: Any, nodes: list[Any], feeds: dict[str, np.ndarray], opset: int, *,
          inits: dict[str, np.ndarray] | None = None, outputs: tuple[str, ...] = ("y",), rtol: float = 1e-5,
          atol: float = 1e-5, exact: bool = False, reference: Any = None) -> dict[str, np.ndarray]:
    """Runs the model on CpuRef and on onnx.reference (or the `reference` model there, for forms
    the reference does not know) and compares every output."""
    model = make_model(nodes, {k: _typed(v) for k, v in feeds.items()}, list(outputs), inits, opset=opset)
    expected = ReferenceEvaluator(reference or model).run(None, feeds)
    got = run_plugnn(runtime, model, feeds)
    for name, want in zip(outputs, expected):
        want = np.asarray(want)
        assert got[name].shape == want.shape, f"{name}: shape {got[name].shape}, reference {want.shape}"
        if exact:  # bit for bit (NaN payloads of bit casts too)
            assert got[name].dtype == want.dtype and got[name].tobytes() == np.ascontiguousarray(want).tobytes(), \
                f"{name}: {got[name].ravel()[:6]} vs {want.ravel()[:6]}"
        else:
            np.testing.assert_allclose(got[name].astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    return got


def import_error(nodes: list[Any], inputs: dict[str, Any], opset: int, inits: dict[str, np.ndarray] | None = None,
                 outputs: tuple[str, ...] = ("y",)) -> str:
    model = make_model(nodes, inputs, list(outputs), inits, opset=opset)
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(model)
    return str(info.value)


RNG = np.random.default_rng(18)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * scale, np.float32)


# ---- GridSample -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset,mode", [(16, "bilinear"), (16, "nearest"), (16, "bicubic"), (20, "linear"),
                                        (20, "cubic"), (22, "nearest")])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(runtime, opset, mode, padding, align) -> None:
    feeds = {"x": f32(2, 3, 5, 4), "grid": RNG.uniform(-1.3, 1.3, (2, 3, 6, 2)).astype(np.float32)}
    node = N("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    # onnx.reference knows opset 20's mode names only: the opset-16 model is checked against its twin.
    twin = N("GridSample", ["x", "grid"], ["y"], mode={"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode),
             padding_mode=padding, align_corners=align)
    reference = make_model([twin], {k: _typed(v) for k, v in feeds.items()}, ["y"], opset=20)
    check(runtime, [node], feeds, opset, rtol=1e-4, atol=1e-4, reference=reference)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_volumetric(runtime, mode) -> None:
    feeds = {"x": f32(1, 2, 3, 4, 5), "grid": RNG.uniform(-1.1, 1.1, (1, 2, 3, 2, 3)).astype(np.float32)}
    check(runtime, [N("GridSample", ["x", "grid"], ["y"], mode=mode)], feeds, 20, rtol=1e-4, atol=1e-4)


def test_grid_sample_defaults(runtime) -> None:
    feeds = {"x": f32(1, 1, 4, 4), "grid": RNG.uniform(-1, 1, (1, 2, 2, 2)).astype(np.float32)}
    reference = make_model([N("GridSample", ["x", "grid"], ["y"])], {k: _typed(v) for k, v in feeds.items()}, ["y"],
                           opset=20)
    check(runtime, [N("GridSample", ["x", "grid"], ["y"])], feeds, 16, rtol=1e-4, atol=1e-4, reference=reference)
    check(runtime, [N("GridSample", ["x", "grid"], ["y"])], feeds, 22, rtol=1e-4, atol=1e-4)


# ---- RoiAlign --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [10, 16, 22])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(runtime, opset, mode, ratio) -> None:
    corners = RNG.uniform(0, 9, (3, 2, 2))
    rois = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1).astype(np.float32)
    feeds = {"x": f32(2, 3, 10, 10), "rois": rois, "batch": np.array([0, 1, 0], np.int64)}
    attrs: dict[str, Any] = {"mode": mode, "output_height": 3, "output_width": 2, "sampling_ratio": ratio,
                             "spatial_scale": 0.9}
    node = N("RoiAlign", ["x", "rois", "batch"], ["y"], **attrs)
    # RoiAlign-10 has no coordinate_transformation_mode: it maps as output_half_pixel does (opset
    # 16 named that behaviour); onnx.reference applies opset 16's default to every opset.
    twin = N("RoiAlign", ["x", "rois", "batch"], ["y"], coordinate_transformation_mode="output_half_pixel", **attrs)
    reference = make_model([twin], {k: _typed(v) for k, v in feeds.items()}, ["y"], opset=16) if opset < 16 else None
    check(runtime, [node], feeds, opset, rtol=1e-4, atol=1e-4, reference=reference)
    if opset >= 16:
        other = N("RoiAlign", ["x", "rois", "batch"], ["y"], coordinate_transformation_mode="output_half_pixel",
                  **attrs)
        check(runtime, [other], feeds, opset, rtol=1e-4, atol=1e-4)


# ---- DeformConv -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [19, 22])
@pytest.mark.parametrize("bias,mask", [(False, False), (True, True)])
def test_deform_conv(runtime, opset, bias, mask) -> None:
    x, w = f32(1, 4, 5, 6), f32(2, 2, 2, 2, scale=0.5)
    offset = f32(1, 2 * 4 * 2, 6, 7, scale=0.6)
    feeds = {"x": x, "w": w, "offset": offset}
    names = ["x", "w", "offset"]
    if bias or mask:
        feeds["b"] = f32(2)
        names.append("b")
    if mask:
        feeds["mask"] = RNG.uniform(0, 1, (1, 8, 6, 7)).astype(np.float32)
        names.append("mask")
    node = N("DeformConv", names, ["y"], group=2, offset_group=2, pads=[1, 1, 1, 1])
    check(runtime, [node], feeds, opset, rtol=1e-4, atol=1e-4)


def test_deform_conv_1d_and_3d(runtime) -> None:
    """Beyond ONNX's reference (2-D only): against the plain convolution zero offsets give."""
    for shape, kernel in [((1, 2, 7), (3,)), ((1, 2, 4, 4, 3), (2, 2, 2))]:
        x, w = f32(*shape), f32(3, 2, *kernel)
        out = [s - k + 1 for s, k in zip(shape[2:], kernel)]
        offset = np.zeros((1, int(np.prod(kernel)) * len(kernel), *out), np.float32)
        model = make_model([N("DeformConv", ["x", "w", "offset"], ["y"])],
                           {"x": list(shape), "w": list(w.shape), "offset": list(offset.shape)}, ["y"], opset=19)
        conv = make_model([N("Conv", ["x", "w"], ["y"])], {"x": list(shape), "w": list(w.shape)}, ["y"], opset=19)
        got = run_plugnn(runtime, model, {"x": x, "w": w, "offset": offset})["y"]
        want = ReferenceEvaluator(conv).run(None, {"x": x, "w": w})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- DFT, STFT, MelWeightMatrix ----------------------------------------------------------------------------


@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("length", [None, 6, 11])
@pytest.mark.parametrize("opset", [17, 20])
def test_dft(runtime, inverse, onesided, axis, length, opset) -> None:
    channels = 2 if inverse or not onesided else 1
    x = f32(2, 8, 7, channels)
    feeds: dict[str, np.ndarray] = {"x": x}
    inits: dict[str, np.ndarray] = {}
    names = ["x", "n" if length else ""]
    if length:
        inits["n"] = np.array(length, np.int64)
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        inits["axis"] = np.array(axis, np.int64)
        names.append("axis")
    else:
        attrs["axis"] = axis
    while names and names[-1] == "":
        names.pop()
    check(runtime, [N("DFT", names, ["y"], **attrs)], feeds, opset, inits=inits, rtol=1e-4, atol=1e-4)


def test_dft_default_axis_and_fold(runtime) -> None:
    x = f32(2, 5, 6, 2)
    check(runtime, [N("DFT", ["x"], ["y"])], {"x": x}, 20, rtol=1e-4, atol=1e-4)   # axis -2
    check(runtime, [N("DFT", ["x"], ["y"])], {"x": x}, 17, rtol=1e-4, atol=1e-4)   # axis 1
    model = make_model([N("DFT", ["c"], ["y"], onesided=1, inverse=1)], {}, ["y"], {"c": x}, opset=19)
    assert not [layer for layer in plugnn.onnx.load(model) if layer.kind.__class__.__name__ == "LayerKind"]
    np.testing.assert_allclose(run_plugnn(runtime, model, {})["y"], ReferenceEvaluator(model).run(None, {})[0],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("window,frame_length", [(True, False), (False, True), (True, True), (False, False)])
@pytest.mark.parametrize("onesided", [0, 1])
def test_stft(runtime, window, frame_length, onesided) -> None:
    feeds = {"signal": f32(2, 40, 1)}
    inits = {"step": np.array(6, np.int64)}
    names = ["signal", "step", "", ""]
    if window:
        inits["window"] = RNG.uniform(0, 1, 16).astype(np.float32)
        names[2] = "window"
    if frame_length:
        inits["length"] = np.array(16, np.int64)
        names[3] = "length"
    while names[-1] == "":
        names.pop()
    check(runtime, [N("STFT", names, ["y"], onesided=onesided)], feeds, 17, inits=inits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bins,length,rate,low,high", [(8, 16, 8192, 0.0, 4096.0), (4, 10, 16000, 40.0, 7000.0),
                                                       (20, 512, 16000, 20.0, 8000.0)])
@pytest.mark.parametrize("dtype", [None, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_mel_weight_matrix(runtime, bins, length, rate, low, high, dtype) -> None:
    inits = {"bins": np.array(bins, np.int64), "length": np.array(length, np.int64), "rate": np.array(rate, np.int64),
             "low": np.array(low, np.float32), "high": np.array(high, np.float32)}
    attrs = {} if dtype is None else {"output_datatype": dtype}
    node = N("MelWeightMatrix", ["bins", "length", "rate", "low", "high"], ["y"], **attrs)
    check(runtime, [node], {}, 17, inits=inits, exact=True)


# ---- Einsum -----------------------------------------------------------------------------------------------


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("...ii ->...i", [(2, 3, 3)]), ("i,i", [(5,), (5,)]),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]), ("i,j->ij", [(3,), (4,)]), ("->", [()]), ("ij->", [(2, 3)]),
    ("ijk,ikl,ilm->jm", [(2, 3, 4), (2, 4, 3), (2, 3, 2)]), ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 6)]),
    ("iij->ij", [(3, 3, 2)]), ("ijji->ij", [(2, 3, 3, 2)]), ("i,i", [(3,), (1,)]), ("ab,bc,cd->da", [(2, 3), (3, 4),
                                                                                                    (4, 5)]),
    ("AbC,CbA->bA", [(2, 3, 4), (4, 3, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("i->i", [(4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij,kj->ikj", [(2, 3), (4, 3)]), ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]), ("...j,j...->...", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(runtime, equation, shapes) -> None:
    feeds = {f"x{i}": f32(*shape) for i, shape in enumerate(shapes)}
    node = N("Einsum", list(feeds), ["y"], equation=equation)
    check(runtime, [node], feeds, 12, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.float16, np.uint8])
def test_einsum_types(runtime, dtype) -> None:
    values = [RNG.integers(0, 5, shape).astype(dtype) for shape in [(2, 3, 4), (2, 4, 3)]]
    node = N("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")
    check(runtime, [node], {"a": values[0], "b": values[1]}, 28, exact=np.dtype(dtype).kind in "iu", rtol=1e-3)


def test_einsum_fold(runtime) -> None:
    model = make_model([N("Einsum", ["a", "b"], ["y"], equation="ij,jk")], {}, ["y"],
                       {"a": f32(2, 3), "b": f32(3, 2)}, opset=12)
    np.testing.assert_allclose(run_plugnn(runtime, model, {})["y"], ReferenceEvaluator(model).run(None, {})[0],
                               rtol=1e-6)


# ---- Col2Im, MaxUnpool, ReverseSequence, TensorScatter --------------------------------------------------------


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 5], [2, 2], {}), ([6, 5], [3, 2], {"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]}),
    ([4, 4, 3], [2, 2, 2], {"pads": [1, 0, 0, 0, 1, 1]}), ([9], [3], {"strides": [2], "dilations": [2]}),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("known", [False, True], ids=["runtime", "folded"])
def test_col2im(runtime, image, block, attrs, dtype, known) -> None:
    r = len(image)
    strides, dilations = attrs.get("strides", [1] * r), attrs.get("dilations", [1] * r)
    pads = attrs.get("pads", [0] * 2 * r)
    blocks = int(np.prod([(image[a] + pads[a] + pads[r + a] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1
                          for a in range(r)]))
    x = RNG.integers(-9, 9, (2, 3 * int(np.prod(block)), blocks)).astype(dtype)
    inits = {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}
    feeds = {"x": x}
    if known:
        inits["x"], feeds = x, {}
    check(runtime, [N("Col2Im", ["x", "image", "block"], ["y"], **attrs)], feeds, 18, inits=inits,
          exact=dtype is np.int32)


@pytest.mark.parametrize("opset", [9, 11, 22])
@pytest.mark.parametrize("output_shape", [None, (1, 2, 6, 7)])
@pytest.mark.parametrize("known", [False, True], ids=["runtime", "folded"])
def test_max_unpool(runtime, opset, output_shape, known) -> None:
    pooled = f32(1, 2, 3, 3)
    indices = np.array([RNG.choice(25, 9, replace=False) + 25 * c for c in range(2)], np.int64).reshape(1, 2, 3, 3)
    inits = {"i": indices}
    names = ["x", "i"]
    if output_shape is not None:
        inits["shape"] = np.array(output_shape, np.int64)
        names.append("shape")
    feeds = {"x": pooled}
    if known:
        inits["x"], feeds = pooled, {}
    node = N("MaxUnpool", names, ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0])
    check(runtime, [node], feeds, opset, inits=inits, exact=True)


def test_max_unpool_run_time_indices_and_1d(runtime) -> None:
    feeds = {"x": f32(2, 1, 4), "i": np.array([[[0, 3, 5, 6]], [[9, 10, 13, 14]]], np.int64)}
    check(runtime, [N("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2], strides=[2])], feeds, 11, exact=True)


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
@pytest.mark.parametrize("lens_known", [True, False], ids=["constant lens", "run-time lens"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_reverse_sequence(runtime, batch_axis, time_axis, lens_known, dtype) -> None:
    shape = [5, 4, 3]
    shape[batch_axis], shape[time_axis] = 4, 5
    data = (RNG.standard_normal(shape) > 0) if dtype is np.bool_ else (RNG.standard_normal(shape) * 9).astype(dtype)
    lens = np.array([5, 0, 3, 1], np.int64)
    feeds = {"data": data}
    inits = {}
    (inits if lens_known else feeds)["lens"] = lens
    node = N("ReverseSequence", ["data", "lens"], ["y"], batch_axis=batch_axis, time_axis=time_axis)
    check(runtime, [node], feeds, 10, inits=inits, exact=True)


def test_reverse_sequence_fold(runtime) -> None:
    model = make_model([N("ReverseSequence", ["d", "l"], ["y"])], {}, ["y"],
                       {"d": f32(3, 2, 2), "l": np.array([2, 3], np.int64)}, opset=10)
    assert np.array_equal(run_plugnn(runtime, model, {})["y"], ReferenceEvaluator(model).run(None, {})[0])


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 1, 2])
@pytest.mark.parametrize("writes", ["none", "constant", "run-time"])
def test_tensor_scatter(runtime, mode, axis, writes) -> None:
    cache = f32(2, 4, 6, 3)
    update_shape = [2, 4, 6, 3]
    update_shape[axis] = 3 if mode == "circular" else 2
    update = f32(*update_shape)
    length = cache.shape[axis]
    starts = np.array([length - 1, 1] if mode == "circular" else [length - 2, 0], np.int64)
    feeds = {"cache": cache, "update": update}
    inits = {}
    names = ["cache", "update"]
    if writes != "none":
        (inits if writes == "constant" else feeds)["writes"] = starts
        names.append("writes")
    node = N("TensorScatter", names, ["y"], axis=axis, mode=mode)
    check(runtime, [node], feeds, 24, inits=inits, exact=True)


def test_tensor_scatter_index_past_the_cache_fails_at_run_time(runtime) -> None:
    model = make_model([N("TensorScatter", ["c", "u", "w"], ["y"])],
                       {"c": [1, 4, 2], "u": [1, 2, 2], "w": ([1], I64)}, ["y"], opset=24)
    network = plugnn.onnx.load(model)
    with runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"])) as loaded:
        with pytest.raises(plugnn.BackendError, match="index 4 is out of range"):
            loaded.run({"c": f32(1, 4, 2), "u": f32(1, 2, 2), "w": np.array([3], np.int64)})


# ---- Det, BitCast ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_det(runtime, opset, shape) -> None:
    check(runtime, [N("Det", ["x"], ["y"])], {"x": f32(*shape)}, opset, rtol=1e-5, atol=1e-5)


def test_det_fold_and_float64(runtime) -> None:
    check(runtime, [N("Det", ["x"], ["y"])], {"x": RNG.standard_normal((3, 5, 5))}, 22, rtol=1e-12, atol=1e-12)
    model = make_model([N("Det", ["c"], ["y"])], {}, ["y"], {"c": f32(2, 3, 3)}, opset=11)
    np.testing.assert_allclose(run_plugnn(runtime, model, {})["y"], ReferenceEvaluator(model).run(None, {})[0],
                               rtol=1e-5)


@pytest.mark.parametrize("source,to", [(np.float32, TensorProto.INT32), (np.int64, TensorProto.DOUBLE),
                                       (np.uint16, TensorProto.FLOAT16), (np.int8, TensorProto.UINT8),
                                       (np.float64, TensorProto.UINT64), (np.int32, TensorProto.FLOAT)])
@pytest.mark.parametrize("known", [False, True], ids=["runtime", "folded"])
def test_bitcast(runtime, source, to, known) -> None:
    x = RNG.integers(-100, 100, (3, 4)).astype(source)
    feeds, inits = ({}, {"x": x}) if known else ({"x": x}, {})
    check(runtime, [N("BitCast", ["x"], ["y"], to=to)], feeds, 26, inits=inits, exact=True)


# ---- TfIdfVectorizer ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("min_n,max_n,skip", [(1, 1, 0), (2, 2, 0), (1, 2, 3), (2, 3, 1), (1, 3, 5)])
@pytest.mark.parametrize("dtype,shape", [(np.int32, (2, 12)), (np.int64, (12,))])
def test_tfidf_vectorizer(runtime, mode, weights, min_n, max_n, skip, dtype, shape) -> None:
    x = RNG.integers(1, 5, shape).astype(dtype)
    pool = [1, 2, 3, 4, 1, 2, 2, 3, 3, 1, 4, 4, 1, 2, 3, 2, 2, 2]   # 4 unigrams, 4 bigrams, 2 trigrams
    counts = [0, 4, 12]
    indexes = [3, 0, 5, 1, 2, 7, 4, 6, 9, 8]
    attrs: dict[str, Any] = {"mode": mode, "min_gram_length": min_n, "max_gram_length": max_n,
                             "max_skip_count": skip, "ngram_counts": counts, "ngram_indexes": indexes,
                             "pool_int64s": pool}
    reference = None
    if weights:
        attrs["weights"] = [float(v) for v in RNG.uniform(0.5, 2, 10)]
    else:  # onnx.reference needs weights; ones give what IDF and TFIDF mean without them
        twin = N("TfIdfVectorizer", ["x"], ["y"], weights=[1.0] * 10, **attrs)
        reference = make_model([twin], {"x": _typed(x)}, ["y"], opset=9)
    check(runtime, [N("TfIdfVectorizer", ["x"], ["y"], **attrs)], {"x": x}, 9, rtol=1e-6, atol=0, reference=reference)


def test_tfidf_duplicates_and_shared_columns(runtime) -> None:
    """A bigram listed twice counts at its last listing; two n-grams sharing a column add up."""
    x = np.array([[1, 2, 1, 2, 3, 1]], np.int64)
    attrs = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1,
             "ngram_counts": [0, 2], "ngram_indexes": [0, 0, 1, 2, 3], "pool_int64s": [1, 2, 1, 2, 2, 1, 1, 2]}
    check(runtime, [N("TfIdfVectorizer", ["x"], ["y"], **attrs)], {"x": x}, 9, exact=True)


# ---- errors -------------------------------------------------------------------------------------------------

X4 = {"x": [1, 2, 4, 4], "grid": [1, 3, 3, 2]}
ROI = {"x": [1, 2, 4, 4], "rois": [2, 4], "b": ([2], I64)}


@pytest.mark.parametrize("nodes,inputs,opset,inits,message", [
    ([N("GridSample", ["x", "grid"], ["y"])], X4, 15, None, "GridSample exists from opset 16"),
    ([N("GridSample", ["x", "grid"], ["y"], mode="linear")], X4, 16, None, "attribute 'mode' = 'linear'"),
    ([N("GridSample", ["x", "grid"], ["y"], mode="bilinear")], X4, 20, None, "attribute 'mode' = 'bilinear'"),
    ([N("GridSample", ["x", "grid"], ["y"], padding_mode="mirror")], X4, 20, None, "padding_mode"),
    ([N("GridSample", ["x", "grid"], ["y"], align_corners=2)], X4, 20, None, "align_corners"),
    ([N("GridSample", ["x", "grid"], ["y"])], {"x": [1, 2, 3, 4, 4], "grid": [1, 2, 2, 2, 3]}, 16, None,
     "before opset 20 takes a 4-D X"),
    ([N("RoiAlign", ["x", "rois", "b"], ["y"], mode="sum")], ROI, 16, None, "attribute 'mode' = 'sum'"),
    ([N("RoiAlign", ["x", "rois", "b"], ["y"], coordinate_transformation_mode="half_pixel")], ROI, 10, None,
     "coordinate_transformation_mode' is RoiAlign's from opset 16"),
    ([N("RoiAlign", ["x", "rois", "b"], ["y"], output_height=0)], ROI, 16, None, "output_height"),
    ([N("DeformConv", ["x", "w", "o"], ["y"], kernel_shape=[3, 3])], {"x": [1, 2, 4, 4], "w": [2, 2, 2, 2],
                                                                       "o": [1, 8, 3, 3]}, 19, None, "kernel_shape"),
    ([N("DeformConv", ["x", "w", "o"], ["y"], offset_group=0)], {"x": [1, 2, 4, 4], "w": [2, 2, 2, 2],
                                                                  "o": [1, 8, 3, 3]}, 19, None, "offset_group"),
    ([N("DFT", ["x"], ["y"], axis=3)], {"x": [1, 4, 4, 2]}, 17, None, "axis 3 is out of range"),
    ([N("DFT", ["x"], ["y"], axis=1)], {"x": [1, 4, 4, 2]}, 20, None, "attribute 'axis' is DFT's before opset 20"),
    ([N("DFT", ["x", "n"], ["y"])], {"x": [1, 4, 4, 2], "n": ([], I64)}, 17, None, "input 1 (dft_length)"),
    ([N("DFT", ["x"], ["y"])], {"x": [1, 4, 4, 3]}, 17, None, "1 (real) or 2 (complex)"),
    ([N("STFT", ["s", "step", "w", "n"], ["y"])], {"s": [1, 20, 1]}, 17,
     {"step": np.array(4, np.int64), "w": np.ones(8, np.float32), "n": np.array(6, np.int64)}, "frame_length is 6"),
    ([N("STFT", ["s", "step"], ["y"])], {"s": [1, 20, 1]}, 17, {"step": np.array(0, np.int64)}, "frame_step is 0"),
    ([N("STFT", ["s", "step", "", "n"], ["y"])], {"s": [1, 5, 1]}, 17,
     {"step": np.array(2, np.int64), "n": np.array(9, np.int64)}, "< 0 frames of 9"),
    ([N("Einsum", ["a", "b"], ["y"], equation="ij->i")], {"a": [2, 3], "b": [3]}, 12, None, "1 operand term"),
    ([N("Einsum", ["a"], ["y"], equation="ij->k")], {"a": [2, 3]}, 12, None, "output label 'k' is in no operand"),
    ([N("Einsum", ["a"], ["y"], equation="ijk->i")], {"a": [2, 3]}, 12, None, "names 3 dims"),
    ([N("Einsum", ["a"], ["y"], equation="i1")], {"a": [2, 3]}, 12, None, "letters"),
    ([N("Einsum", ["a"], ["y"], equation="...ij->ij")], {"a": [4, 2, 3]}, 12, None, "no '...'"),
    ([N("Einsum", ["a", "b"], ["y"], equation="i,i")], {"a": [2], "b": [3]}, 12, None, "do not broadcast"),
    ([N("Einsum", ["a"], ["y"], equation="ii")], {"a": [2, 3]}, 12, None, "has sizes 2 and 3"),
    ([N("Col2Im", ["x", "i", "b"], ["y"])], {"x": [1, 8, 10]}, 18,
     {"i": np.array([4, 4], np.int64), "b": np.array([2, 2], np.int64)}, "the image holds [3, 3] = 9 blocks"),
    ([N("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
     {"x": [1, 1, 2, 2], "i": ([1, 1, 2, 2], I64)}, 11, {"s": np.array([1, 1, 3, 3], np.int64)},
     "at least the unpooled shape"),
    ([N("MaxUnpool", ["x", "i"], ["y"])], {"x": [1, 1, 2, 2], "i": ([1, 1, 2, 2], I64)}, 11, None, "kernel_shape"),
    ([N("ReverseSequence", ["x", "l"], ["y"], batch_axis=2)], {"x": [3, 2, 2]}, 10, {"l": np.array([1, 2])},
     "batch_axis"),
    ([N("ReverseSequence", ["x", "l"], ["y"])], {"x": [3, 2, 2]}, 10, {"l": np.array([1, 4])}, "lies in [0, 3]"),
    ([N("TensorScatter", ["c", "u"], ["y"], axis=0)], {"c": [2, 4, 2], "u": [2, 4, 2]}, 24, None,
     "attribute 'axis' = 0"),
    ([N("TensorScatter", ["c", "u"], ["y"])], {"c": [2, 4, 2], "u": [2, 5, 2]}, 24, None, "at most as long"),
    ([N("Det", ["x"], ["y"])], {"x": [2, 3]}, 11, None, "square"),
    ([N("BitCast", ["x"], ["y"], to=TensorProto.DOUBLE)], {"x": [2]}, 26, None, "differ in width"),
    ([N("BitCast", ["x"], ["y"], to=TensorProto.STRING)], {"x": [2]}, 26, None, "string"),
    ([N("BitCast", ["x"], ["y"], to=TensorProto.INT32)], {"x": [2]}, 25, None, "BitCast exists from opset 26"),
    ([N("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
        ngram_counts=[0], ngram_indexes=[0], pool_strings=["a"])], {"x": ([3], I64)}, 9, None, "pool_strings"),
    ([N("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
        ngram_counts=[0], ngram_indexes=[0, 1], pool_int64s=[1])], {"x": ([3], I64)}, 9, None, "ngram_indexes has"),
    ([N("TfIdfVectorizer", ["x"], ["y"], mode="BM25", min_gram_length=1, max_gram_length=1, max_skip_count=0,
        ngram_counts=[0], ngram_indexes=[0], pool_int64s=[1])], {"x": ([3], I64)}, 9, None, "mode"),
    ([N("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
        ngram_counts=[0], ngram_indexes=[0], pool_int64s=[1])], {"x": [3]}, 9, None, "float32"),
    ([N("MelWeightMatrix", ["b", "n", "r", "lo", "hi"], ["y"])], {}, 17,
     {"b": np.array(8, np.int64), "n": np.array(16, np.int64), "r": np.array(100, np.int64),
      "lo": np.array(0.0, np.float32), "hi": np.array(400.0, np.float32)}, "leave the 9 spectrogram bins"),
], ids=lambda v: None)
def test_errors_name_node_operator_and_attribute(nodes, inputs, opset, inits, message) -> None:
    text = import_error(nodes, inputs, opset, inits)
    assert f"({nodes[0].op_type}" in text and "node" in text, text
    assert message in text, text
