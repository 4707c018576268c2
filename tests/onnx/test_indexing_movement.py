"""ONNX indexing and data-movement import: Gather, GatherElements, GatherND, ScatterElements,
Scatter, ScatterND, OneHot, NonZero, Slice, Split, Pad, Expand, Tile, DepthToSpace,
SpaceToDepth, Trilu, Range, Size, EyeLike, Shape and the shape operators on every element type.

Each case runs twice against onnxruntime (CPU provider): with its data as graph inputs (layers
computed at run time on CpuRef) and with every input an initializer (folded with NumPy at import:
the network then holds no layer of these kinds). Data movement is exact, so outputs must be
equal. Then the errors, which name node, operator and attribute, and the run-time failure of an
index out of range.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
from onnx import TensorProto, helper

import plugnn
import plugnn.onnx
from plugnn import descriptors as d
from plugnn.errors import ModelError, PlugnnError

N = helper.make_node
RNG = np.random.default_rng(11)

MOVING_KINDS = {d.LayerKind.GATHER, d.LayerKind.SCATTER, d.LayerKind.SLICE, d.LayerKind.SPLIT, d.LayerKind.PAD,
                d.LayerKind.EXPAND, d.LayerKind.ONE_HOT, d.LayerKind.TRIANGULAR, d.LayerKind.RESHAPE,
                d.LayerKind.TRANSPOSE, d.LayerKind.CONCAT}


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*shape: int, low: int = -50, high: int = 50, dtype: Any = np.int64) -> np.ndarray:
    return RNG.integers(low, high, shape).astype(dtype)


def i64(*values: Any) -> np.ndarray:
    return np.array(values, np.int64)


def case(id: str, nodes: list[Any], feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray] | None = None,
         opset: int = 17, outputs: tuple[str, ...] = ("y",)) -> Any:
    return pytest.param(nodes, feeds, inits or {}, opset, outputs, id=id)


def typed_inputs(feeds: dict[str, np.ndarray]) -> dict[str, Any]:
    return {n: (list(a.shape), helper.np_dtype_to_tensor_dtype(a.dtype)) for n, a in feeds.items()}


X = f32(3, 4, 5)
CASES = [
    # -- Gather family ---------------------------------------------------------------------------
    case("gather-axis0", [N("Gather", ["x", "i"], ["y"])], {"x": f32(5, 3), "i": i64([4, -1], [0, -5])}),
    case("gather-axis1-int32-scalar", [N("Gather", ["x", "i"], ["y"], axis=1)],
         {"x": f32(2, 4, 3), "i": np.array(-2, np.int32)}),
    case("gather-opset7", [N("Gather", ["x", "i"], ["y"], axis=-1)], {"x": f32(2, 3), "i": i64(2, 0, 1)}, opset=7),
    case("gather-int64-data", [N("Gather", ["x", "i"], ["y"])], {"x": ints(4, 2), "i": i64(3, 3, 0)}),
    case("gather-bool-data", [N("Gather", ["x", "i"], ["y"], axis=1)],
         {"x": RNG.integers(0, 2, (2, 4)).astype(bool), "i": i64(1, 3)}),
    case("gather-const-indices", [N("Gather", ["x", "i"], ["y"], axis=2)], {"x": X}, {"i": i64(4, 0)}),
    case("gather-const-data", [N("Gather", ["x", "i"], ["y"])], {"i": i64([1, 0], [2, 2])}, {"x": f32(3, 2)}),
    case("gather-elements", [N("GatherElements", ["x", "i"], ["y"], axis=1)],
         {"x": f32(3, 4), "i": i64([0, -1, 3], [2, 2, 1])}, opset=13),
    case("gather-elements-opset11-int32", [N("GatherElements", ["x", "i"], ["y"])],
         {"x": ints(3, 2, dtype=np.int32), "i": np.array([[2, 0], [-3, 1], [1, 1], [0, 2]], np.int32)}, opset=11),
    case("gather-nd", [N("GatherND", ["x", "i"], ["y"])], {"x": f32(3, 4, 2), "i": i64([0, 3], [2, -1])}, opset=11),
    case("gather-nd-batch-dims", [N("GatherND", ["x", "i"], ["y"], batch_dims=1)],
         {"x": f32(2, 3, 4), "i": i64([[1], [2]], [[0], [-1]])}, opset=12),
    case("gather-nd-slices-int32", [N("GatherND", ["x", "i"], ["y"])],
         {"x": ints(3, 4, dtype=np.int32), "i": i64([2], [0], [-1])}, opset=13),
    # -- Scatter family --------------------------------------------------------------------------
    case("scatter-elements", [N("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
         {"x": f32(3, 4), "i": i64([0, 3], [1, -1], [2, 2]), "u": f32(3, 2)}, opset=11),
    case("scatter-elements-add-repeated", [N("ScatterElements", ["x", "i", "u"], ["y"], reduction="add")],
         {"x": f32(3, 2), "i": i64([1, 1], [1, 0], [1, 2]), "u": f32(3, 2)}, opset=16),
    case("scatter-elements-mul-int64", [N("ScatterElements", ["x", "i", "u"], ["y"], reduction="mul", axis=1)],
         {"x": ints(2, 3, low=-5, high=5), "i": i64([0, 0], [2, 1]), "u": ints(2, 2, low=-5, high=5)}, opset=16),
    case("scatter-elements-max", [N("ScatterElements", ["x", "i", "u"], ["y"], reduction="max")],
         {"x": f32(4), "i": i64(3, 0, 3, -1), "u": f32(4)}, opset=18),
    case("scatter-elements-min-int32", [N("ScatterElements", ["x", "i", "u"], ["y"], reduction="min")],
         {"x": ints(4, dtype=np.int32), "i": i64(1, 1, 2), "u": ints(3, dtype=np.int32)}, opset=18),
    case("scatter-opset9", [N("Scatter", ["x", "i", "u"], ["y"], axis=0)],
         {"x": f32(3, 3), "i": i64([1, 0, 2], [0, 2, 1]), "u": f32(2, 3)}, opset=9),
    case("scatter-nd", [N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": f32(4, 3), "i": i64([3], [0]), "u": f32(2, 3)}, opset=11),
    case("scatter-nd-elements", [N("ScatterND", ["x", "i", "u"], ["y"])],
         {"x": ints(3, 3), "i": i64([0, 2], [2, -1]), "u": ints(2)}, opset=13),
    case("scatter-nd-add", [N("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
         {"x": f32(4, 2), "i": i64([1], [1], [3]), "u": f32(3, 2)}, opset=16),
    case("scatter-nd-mul", [N("ScatterND", ["x", "i", "u"], ["y"], reduction="mul")],
         {"x": f32(4, 2), "i": i64([2], [2]), "u": f32(2, 2)}, opset=16),
    case("scatter-nd-max-min", [N("ScatterND", ["x", "i", "u"], ["m"], reduction="max"),
                                N("ScatterND", ["m", "i", "u"], ["y"], reduction="min")],
         {"x": f32(5), "i": i64([1], [4], [1]), "u": f32(3)}, opset=18),
    # -- OneHot, Trilu ---------------------------------------------------------------------------
    case("one-hot", [N("OneHot", ["i", "depth", "v"], ["y"])],
         {"i": i64([1, 5], [-1, 0])}, {"depth": np.array(4, np.int64), "v": np.array([0, 1], np.float32)}, opset=11),
    case("one-hot-axis0-float-indices", [N("OneHot", ["i", "depth", "v"], ["y"], axis=0)],
         {"i": np.array([0.0, 2.7, -1.0, 5.0], np.float32), "v": np.array([3, 7], np.float32)},
         {"depth": np.array([3.0], np.float32)}, opset=11),
    case("one-hot-opset9", [N("OneHot", ["i", "depth", "v"], ["y"], axis=1)],
         {"i": i64([0, 2, 1]), "v": np.array([-1.0, 1.0], np.float32)}, {"depth": np.array([3], np.int64)}, opset=9),
    case("trilu-upper", [N("Trilu", ["x"], ["y"])], {"x": f32(2, 3, 4)}, opset=14),
    case("trilu-lower-k", [N("Trilu", ["x", "k"], ["y"], upper=0)], {"x": ints(4, 3)}, {"k": np.array(-1, np.int64)},
         opset=14),
    # -- Slice -----------------------------------------------------------------------------------
    case("slice", [N("Slice", ["x", "s", "e"], ["y"])], {"x": X}, {"s": i64(1, 0), "e": i64(3, -1)}, opset=13),
    case("slice-axes-steps", [N("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": X},
         {"s": i64(-1, 4), "e": i64(-1000, 0), "a": i64(-1, 1), "t": i64(-2, -3)}, opset=13),
    case("slice-clamp-and-huge", [N("Slice", ["x", "s", "e", "a"], ["y"])], {"x": X},
         {"s": i64(-100, 2), "e": i64(2**62, 2**62), "a": i64(0, 2)}, opset=11),
    case("slice-negative-step-start-below-dim", [N("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": X},
         {"s": i64(-100), "e": i64(-2**63), "a": i64(1), "t": i64(-1)}, opset=13),
    case("slice-empty", [N("Slice", ["x", "s", "e"], ["y"])], {"x": X}, {"s": i64(2), "e": i64(1)}, opset=13),
    case("slice-opset9-attributes", [N("Slice", ["x"], ["y"], starts=[0, 1], ends=[2, 100], axes=[0, 2])],
         {"x": X}, opset=9),
    case("slice-int8", [N("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": ints(5, 4, dtype=np.int8)},
         {"s": i64(4), "e": i64(0), "a": i64(0), "t": i64(-2)}, opset=13),
    # -- Split -----------------------------------------------------------------------------------
    case("split-equal-opset7", [N("Split", ["x"], ["a", "b"], axis=2)], {"x": f32(2, 3, 4)}, opset=7,
         outputs=("a", "b")),
    case("split-attribute-opset11", [N("Split", ["x"], ["a", "b", "c"], axis=-1, split=[1, 0, 3])],
         {"x": f32(2, 4)}, opset=11, outputs=("a", "b", "c")),
    case("split-input-opset13", [N("Split", ["x", "s"], ["a", "b"], axis=1)], {"x": ints(2, 5)},
         {"s": i64(3, 2)}, opset=13, outputs=("a", "b")),
    case("split-num-outputs-opset18", [N("Split", ["x"], ["a", "b", "c"], num_outputs=3)], {"x": f32(7, 2)},
         opset=18, outputs=("a", "b", "c")),
    # -- Pad -------------------------------------------------------------------------------------
    case("pad-constant-opset7", [N("Pad", ["x"], ["y"], pads=[0, 1, 2, 1, 0, 0], value=1.5)], {"x": f32(2, 3, 2)},
         opset=7),
    case("pad-reflect-opset10", [N("Pad", ["x"], ["y"], mode="reflect", pads=[0, 2, 1, 0])], {"x": f32(3, 4)},
         opset=10),
    case("pad-edge-input", [N("Pad", ["x", "p"], ["y"], mode="edge")], {"x": f32(3, 4)}, {"p": i64(2, 0, 1, 3)},
         opset=13),
    case("pad-constant-value-input", [N("Pad", ["x", "p", "v"], ["y"])], {"x": ints(2, 3), "v": np.array(7, np.int64)},
         {"p": i64(1, 1, 0, 2)}, opset=13),
    case("pad-negative-crop", [N("Pad", ["x", "p"], ["y"])], {"x": f32(4, 5)}, {"p": i64(-1, 2, 1, -3)}, opset=13),
    case("pad-axes-opset18", [N("Pad", ["x", "p", "", "a"], ["y"], mode="reflect")], {"x": X},
         {"p": i64(1, 2, 2, 1), "a": i64(-1, 1)}, opset=18),
    case("pad-wrap-opset19", [N("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": f32(3, 4)}, {"p": i64(1, 3, 2, 2)},
         opset=19),
    case("pad-reflect-crop-then-pad", [N("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": f32(4, 5)},
         {"p": i64(-1, 2, 1, -2)}, opset=13),
    case("pad-edge-crop-then-pad", [N("Pad", ["x", "p"], ["y"], mode="edge")], {"x": ints(4, 5)},
         {"p": i64(1, -2, -1, 2)}, opset=13),
    case("pad-wrap-larger-than-dim", [N("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": f32(3, 4)},
         {"p": i64(5, -1, 4, 9)}, opset=19),
    # -- Expand, Tile, DepthToSpace, SpaceToDepth ------------------------------------------------
    case("expand", [N("Expand", ["x", "s"], ["y"])], {"x": f32(3, 1)}, {"s": i64(2, 1, 4)}, opset=8),
    case("expand-smaller-shape", [N("Expand", ["x", "s"], ["y"])], {"x": ints(2, 3)}, {"s": i64(3)}, opset=13),
    case("tile", [N("Tile", ["x", "r"], ["y"])], {"x": f32(2, 3)}, {"r": i64(3, 2)}, opset=13),
    case("tile-ones-and-zero", [N("Tile", ["x", "r"], ["y"])], {"x": ints(2, 1, 3)}, {"r": i64(1, 4, 1)}, opset=7),
    case("depth-to-space-dcr", [N("DepthToSpace", ["x"], ["y"], blocksize=2)], {"x": f32(1, 8, 2, 3)}, opset=11),
    case("depth-to-space-crd", [N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": f32(2, 8, 2, 2)},
         opset=13),
    case("space-to-depth", [N("SpaceToDepth", ["x"], ["y"], blocksize=2)], {"x": f32(1, 3, 4, 6)}, opset=13),
    # -- Range, Size, EyeLike, Shape (values known at import) ------------------------------------
    case("size", [N("Size", ["x"], ["y"])], {"x": f32(2, 3)}, opset=13),
    case("eye-like", [N("EyeLike", ["x"], ["y"], k=1)], {"x": f32(3, 4)}, opset=9),
    case("eye-like-dtype", [N("EyeLike", ["x"], ["y"], k=-1, dtype=TensorProto.INT32)], {"x": f32(4, 2)}, opset=9),
    case("shape-start-end", [N("Shape", ["x"], ["y"], start=-2, end=10)], {"x": X}, opset=15),
    # -- the shape operators on every element type at run time ----------------------------------
    case("reshape-int32", [N("Reshape", ["x", "s"], ["y"])], {"x": ints(2, 6, dtype=np.int32)},
         {"s": i64(3, -1)}, opset=13),
    case("flatten-uint8", [N("Flatten", ["x"], ["y"], axis=2)], {"x": ints(2, 3, 2, low=0, dtype=np.uint8)}),
    case("squeeze-unsqueeze-int16", [N("Squeeze", ["x", "a"], ["m"]), N("Unsqueeze", ["m", "b"], ["y"])],
         {"x": ints(1, 3, 1, dtype=np.int16)}, {"a": i64(0, 2), "b": i64(0, -1)}, opset=13),
    case("concat-bool", [N("Concat", ["x", "z"], ["y"], axis=1)],
         {"x": RNG.integers(0, 2, (2, 1)).astype(bool), "z": RNG.integers(0, 2, (2, 3)).astype(bool)}),
    case("transpose-float64", [N("Transpose", ["x"], ["y"], perm=[1, 2, 0])], {"x": X.astype(np.float64)}),
    case("identity-uint64", [N("Identity", ["x"], ["m"]), N("Identity", ["m"], ["y"])],
         {"x": ints(3, low=0, dtype=np.uint64)}),
    case("transpose-float16", [N("Transpose", ["x"], ["y"])], {"x": f32(2, 3).astype(np.float16)}),
]


def _model(nodes: list[Any], feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray], opset: int,
           outputs: tuple[str, ...]) -> Any:
    return make_model(nodes, typed_inputs(feeds), list(outputs), inits, opset=opset)


@pytest.mark.parametrize("nodes, feeds, inits, opset, outputs", CASES)
def test_runs_like_onnxruntime(runtime: Any, nodes, feeds, inits, opset, outputs) -> None:  # type: ignore[no-untyped-def]
    model = _model(nodes, feeds, inits, opset, outputs)
    expected = run_ort(model, feeds)
    actual = run_plugnn(runtime, model, feeds)
    for name in outputs:
        assert actual[name].dtype == expected[name].dtype, name
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@pytest.mark.parametrize("nodes, feeds, inits, opset, outputs", CASES)
def test_folds_when_every_input_is_known(runtime: Any, nodes, feeds, inits, opset, outputs) -> None:  # type: ignore[no-untyped-def]
    model = _model(nodes, {}, {**inits, **feeds}, opset, outputs)
    expected = run_ort(_model(nodes, feeds, inits, opset, outputs), feeds)
    network = plugnn.onnx.load(model)
    computed = [layer.name for layer in network if layer.kind in MOVING_KINDS]
    assert not computed, f"layers left unfolded: {computed}"
    actual = run_plugnn(runtime, model, {})
    for name in outputs:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_shape_chain_stays_folded(runtime: Any) -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range, Expand and Slice over shapes: only
    the final reshape and expand of run-time data remain."""
    nodes = [
        N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["n"], axis=0), N("Unsqueeze", ["n", "a0"], ["nu"]),
        N("Slice", ["s", "st", "en"], ["hw"]), N("Concat", ["nu", "minus1"], ["target"], axis=0),
        N("Reshape", ["x", "target"], ["flat"]),
        N("Range", ["zero", "n", "one"], ["r"]), N("Expand", ["flat", "hw"], ["y"]),
        N("Add", ["r", "one"], ["r1"]),
    ]
    inits = {"i0": np.array(0, np.int64), "a0": i64(0), "st": i64(1), "en": i64(2), "minus1": i64(-1),
             "zero": np.array(0, np.int64), "one": np.array(1, np.int64)}
    model = make_model(nodes, {"x": [3, 1, 4]}, ["y", "r1"], inits, opset=13)
    network = plugnn.onnx.load(model)
    kinds = [layer.kind for layer in network if isinstance(layer.kind, d.LayerKind)]
    assert kinds == [d.LayerKind.RESHAPE, d.LayerKind.EXPAND], kinds
    x = f32(3, 1, 4)
    actual = run_plugnn(runtime, model, {"x": x})
    expected = run_ort(model, {"x": x})
    np.testing.assert_array_equal(actual["y"], expected["y"])
    np.testing.assert_array_equal(actual["r1"], expected["r1"])


@pytest.mark.parametrize("start, limit, delta, dtype", [
    (0, 10, 3, np.int64), (10, -3, -4, np.int32), (1, 1, 1, np.int64), (0.5, 2.0, 0.3, np.float32),
    (5.0, 1.0, -1.5, np.float64), (0, 5, -1, np.int16),
])
def test_range_folds(runtime: Any, start, limit, delta, dtype) -> None:  # type: ignore[no-untyped-def]
    inits = {"s": np.array(start, dtype), "l": np.array(limit, dtype), "d": np.array(delta, dtype)}
    model = make_model([N("Range", ["s", "l", "d"], ["y"])], {}, ["y"], inits, opset=11)
    actual = run_plugnn(runtime, model, {})["y"]
    from onnx.reference import ReferenceEvaluator

    (expected,) = ReferenceEvaluator(model).run(None, {})
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_gather_index_out_of_range_at_run_time_fails_run(runtime: Any) -> None:
    model = make_model([N("Gather", ["x", "i"], ["y"], name="pick")],
                       {"x": [4, 2], "i": ([2], TensorProto.INT64)}, ["y"], opset=13)
    network = plugnn.onnx.load(model)
    with runtime.load_network(plugnn.optimize(network, runtime, ["CpuRef"])) as loaded:
        with pytest.raises(PlugnnError, match=r"pick.*index 4 is out of range for axis 0 of size 4"):
            loaded.run({"x": f32(4, 2), "i": i64(1, 4)})
        ok = loaded.run({"x": np.ones((4, 2), np.float32), "i": i64(-4, 3)})  # still usable after a failure
        assert ok["y"].shape == (2, 2)


# ---- errors ---------------------------------------------------------------------------------------


def _load_error(nodes: list[Any], inputs: dict[str, Any], inits: dict[str, Any] | None = None,
                opset: int = 17, outputs: tuple[str, ...] = ("y",)) -> str:
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(make_model(nodes, inputs, list(outputs), inits or {}, opset=opset))
    return str(info.value)


RUN_TIME = "is computed at run time, but the output shape depends on it"
I64 = TensorProto.INT64


@pytest.mark.parametrize("nodes, inputs, inits, opset, outputs, message", [
    # values the output shape depends on, computed at run time (here: gathered from run-time data)
    ([N("Gather", ["x", "z"], ["e"]), N("Slice", ["x", "st", "e"], ["y"], name="cut")],
     {"x": ([4], I64)}, {"st": i64(0), "z": i64(0)}, 13, ("y",),
     f"node 'cut' (#1, Slice): input 2 (ends) 'e' {RUN_TIME}"),
    ([N("Gather", ["x", "z"], ["ri"]), N("Slice", ["x", "ri", "e"], ["y"])],
     {"x": ([4], I64)}, {"e": i64(1), "z": i64(0)}, 13, ("y",), f"input 1 (starts) 'ri' {RUN_TIME}"),
    ([N("Gather", ["x", "z"], ["a"]), N("Slice", ["x", "s", "e", "a"], ["y"])],
     {"x": ([1], I64)}, {"s": i64(0), "e": i64(1), "z": i64(0)}, 13, ("y",), f"input 3 (axes) 'a' {RUN_TIME}"),
    ([N("Gather", ["n", "z"], ["m"]), N("Range", ["zero", "m", "one"], ["y"], name="rng")], {"n": ([2], I64)},
     {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "z": np.array(0, np.int64)}, 13, ("y",),
     "node 'rng' (#1, Range): input 1 (limit) 'm' is computed at run time, but the output's length depends on "
     "Range's values"),
    ([N("Range", ["zero", "n", "one"], ["y"])], {"n": ([], I64)},
     {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)}, 13, ("y",),
     "input 1 (limit) 'n' must be known at import time, but it is a graph input"),
    ([N("Gather", ["r", "z"], ["m"]), N("Tile", ["x", "m"], ["y"])], {"x": [2], "r": ([1, 1], I64)},
     {"z": i64(0)}, 13, ("y",), f"input 1 (repeats) 'm' {RUN_TIME}"),
    ([N("Gather", ["s", "z"], ["m"]), N("Expand", ["x", "m"], ["y"])], {"x": [2], "s": ([1, 1], I64)},
     {"z": i64(0)}, 13, ("y",), f"input 1 (shape) 'm' {RUN_TIME}"),
    ([N("Gather", ["p", "z"], ["m"]), N("Pad", ["x", "m"], ["y"])], {"x": [2], "p": ([1, 2], I64)},
     {"z": i64(0)}, 13, ("y",), f"input 1 (pads) 'm' {RUN_TIME}"),
    ([N("Gather", ["s", "z"], ["m"]), N("Split", ["x", "m"], ["y", "w"])], {"x": [4], "s": ([1, 2], I64)},
     {"z": i64(0)}, 13, ("y", "w"), f"input 1 (split) 'm' {RUN_TIME}"),
    ([N("Gather", ["s", "z"], ["m"]), N("OneHot", ["i", "m", "v"], ["y"])], {"i": ([2], I64), "s": ([1], I64)},
     {"v": np.array([0, 1], np.float32), "z": np.array(0, np.int64)}, 11, ("y",),
     "input 1 (depth) 'm' is computed at run time"),
    ([N("Gather", ["s", "z"], ["k"]), N("Trilu", ["x", "k"], ["y"])], {"x": [2, 2], "s": ([1], I64)},
     {"z": np.array(0, np.int64)}, 14, ("y",), "input 1 (k) 'k' is computed at run time, but it selects the diagonal"),
    # graph inputs the backend would bind: named as such
    ([N("Slice", ["x", "s", "e"], ["y"])], {"x": [4], "s": ([1], I64), "e": ([1], I64)}, {}, 13, ("y",),
     "input 1 (starts) 's' must be known at import time, but it is a graph input"),
    # attributes and values
    ([N("Gather", ["x", "i"], ["y"], axis=2)], {"x": [2, 2], "i": ([1], I64)}, {}, 13, ("y",),
     "attribute 'axis' = 2 is out of range for rank 2"),
    ([N("Gather", ["x", "i"], ["y"])], {"x": [2, 2]}, {"i": i64(-3)}, 13, ("y",),
     "indices -3 is out of range for axis 0 of size 2 (valid: -2 to 1)"),
    ([N("GatherElements", ["x", "i"], ["y"])], {"x": [2, 2], "i": ([3, 3], I64)}, {}, 13, ("y",),
     "no larger dims except on axis 0"),
    ([N("GatherND", ["x", "i"], ["y"], batch_dims=1)], {"x": [2, 3], "i": ([2, 1], I64)}, {}, 11, ("y",),
     "attribute 'batch_dims' is GatherND's from opset 12"),
    ([N("GatherND", ["x", "i"], ["y"], batch_dims=2)], {"x": [2, 3], "i": ([2, 1], I64)}, {}, 13, ("y",),
     "attribute 'batch_dims' = 2"),
    ([N("GatherND", ["x", "i"], ["y"])], {"x": [2, 3], "i": ([2, 3], I64)}, {}, 13, ("y",),
     "the last dim of input 1 (indices) [2, 3] is 3; it must be in 1..2"),
    ([N("ScatterElements", ["x", "i", "u"], ["y"], reduction="add")], {"x": [3], "i": ([1], I64), "u": [1]}, {},
     13, ("y",), "attribute 'reduction' is ScatterElements's from opset 16"),
    ([N("ScatterElements", ["x", "i", "u"], ["y"], reduction="max")], {"x": [3], "i": ([1], I64), "u": [1]}, {},
     17, ("y",), "attribute 'reduction' = 'max' is not supported; supported: none, add, mul at opset 17"),
    ([N("ScatterND", ["x", "i", "u"], ["y"])], {"x": [3, 2], "i": ([1, 1], I64), "u": [1, 3]}, {}, 13, ("y",),
     "input 2 (updates) of shape [1, 3] must have shape indices[:-1] + data[k:] = [1, 2]"),
    ([N("ScatterElements", ["x", "i", "u"], ["y"])], {"x": [3], "i": ([1], I64), "u": ([1], TensorProto.DOUBLE)},
     {}, 13, ("y",), "input 2 (updates) has element type float64, data has float32"),
    ([N("Scatter", ["x", "i", "u"], ["y"])], {"x": [3], "i": ([1], I64), "u": [1]}, {}, 11, ("y",),
     "Scatter was replaced by ScatterElements in opset 11"),
    ([N("OneHot", ["i", "d", "v"], ["y"], axis=3)], {"i": ([2], I64)}, {"d": i64(3), "v": np.zeros(2, np.float32)},
     11, ("y",), "attribute 'axis' = 3 is out of range for the output's rank 2"),
    ([N("OneHot", ["i", "d", "v"], ["y"])], {"i": ([2], I64)}, {"d": i64(3), "v": np.zeros(3, np.float32)},
     11, ("y",), "input 2 (values) must be [off_value, on_value] of shape [2], got [3]"),
    ([N("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": [4]},
     {"s": i64(0), "e": i64(4), "a": i64(0), "t": i64(0)}, 13, ("y",), "steps [0]: a step is 0"),
    ([N("Slice", ["x", "s", "e", "a"], ["y"])], {"x": [4, 4]}, {"s": i64(0, 0), "e": i64(1, 1), "a": i64(1, -1)},
     13, ("y",), "axes [1, -1] name an axis twice"),
    ([N("Slice", ["x"], ["y"], starts=[0], ends=[1])], {"x": [4]}, {}, 13, ("y",),
     "attribute 'starts' is Slice's before opset 10; from opset 10 it is an input"),
    ([N("Split", ["x"], ["y", "z"])], {"x": [5]}, {}, 13, ("y", "z"),
     "axis 0 of size 5 does not split into 2 equal parts"),
    ([N("Split", ["x"], ["y", "z"], split=[1, 3])], {"x": [5]}, {}, 11, ("y", "z"),
     "split [1, 3] must give one size >= 0 per output (2) adding up to axis 0's 5"),
    ([N("Split", ["x"], ["y", "z"], num_outputs=3)], {"x": [5]}, {}, 18, ("y", "z"),
     "attribute 'num_outputs' = 3 must be >= 1 and equal the node's 2 outputs"),
    ([N("Split", ["x"], ["y", "z"], num_outputs=2)], {"x": [5]}, {}, 13, ("y", "z"),
     "attribute 'num_outputs' is Split's from opset 18"),
    ([N("Split", ["x"], ["y", "z"])], {"x": [4]}, {}, 18, ("y", "z"),
     "either input 'split' or attribute 'num_outputs' is required from opset 18"),
    ([N("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": [4]}, {"p": i64(1, 1)}, 18, ("y",),
     "attribute 'mode' = 'wrap' is not supported; supported: constant, reflect, edge at opset 18"),
    ([N("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": [3]}, {"p": i64(3, 0)}, 13, ("y",),
     "reflect padding of axis 0 needs pads smaller than its 3 (cropped) elements"),
    ([N("Pad", ["x", "p"], ["y"])], {"x": [3]}, {"p": i64(-2, -2)}, 13, ("y",),
     "axis 0 of size 3 loses more elements than it has"),
    ([N("Pad", ["x", "p"], ["y"])], {"x": [3, 3]}, {"p": i64(1, 1)}, 13, ("y",),
     "pads [1, 1] must hold 2 values per padded axis (2 axes)"),
    ([N("Pad", ["x", "p", "", "a"], ["y"])], {"x": [3]}, {"p": i64(1, 1), "a": i64(0)}, 13, ("y",),
     "input 3 (axes) is Pad's from opset 18"),
    ([N("Pad", ["x", "p", "v"], ["y"])], {"x": [3], "v": ([], TensorProto.DOUBLE)}, {"p": i64(1, 1)}, 13, ("y",),
     "input 2 (constant_value) has element type float64, input 0 has float32"),
    ([N("Expand", ["x", "s"], ["y"])], {"x": [3]}, {"s": i64(2)}, 13, ("y",),
     "input 0 of shape [3] does not broadcast with shape [2]"),
    ([N("Tile", ["x", "r"], ["y"])], {"x": [3]}, {"r": i64(1, 2)}, 13, ("y",),
     "input 1 (repeats) [1, 2] must hold one value >= 0 per dim of input 0 (rank 1)"),
    ([N("DepthToSpace", ["x"], ["y"])], {"x": [1, 4, 2, 2]}, {}, 13, ("y",), "attribute 'blocksize' is required"),
    ([N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="XYZ")], {"x": [1, 4, 2, 2]}, {}, 13, ("y",),
     "attribute 'mode' = 'XYZ' is not supported; supported: DCR, CRD"),
    ([N("DepthToSpace", ["x"], ["y"], blocksize=2)], {"x": [1, 6, 2, 2]}, {}, 13, ("y",),
     "C of [1, 6, 2, 2] must be a multiple of blocksize^2 = 4"),
    ([N("SpaceToDepth", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": [1, 1, 2, 2]}, {}, 13, ("y",),
     "attribute 'mode' is SpaceToDepth's from opset 28"),
    ([N("SpaceToDepth", ["x"], ["y"], blocksize=3)], {"x": [1, 1, 4, 3]}, {}, 13, ("y",),
     "H and W of [1, 1, 4, 3] must be multiples of blocksize 3"),
    ([N("Trilu", ["x"], ["y"], upper=2)], {"x": [2, 2]}, {}, 14, ("y",),
     "attribute 'upper' = 2 is not supported; supported: 0, 1"),
    ([N("Trilu", ["x"], ["y"])], {"x": [2]}, {}, 14, ("y",), "input 0 must have rank >= 2"),
    ([N("Range", ["s", "l", "d"], ["y"])], {}, {"s": i64(0)[0], "l": i64(3)[0], "d": i64(0)[0]}, 11, ("y",),
     "input 2 (delta) is 0"),
    ([N("EyeLike", ["x"], ["y"])], {"x": [2, 2, 2]}, {}, 9, ("y",), "input 0 must have rank 2"),
    ([N("Shape", ["x"], ["y"], start=1)], {"x": [2, 2]}, {}, 13, ("y",), "attribute 'start' is Shape's from opset 15"),
])
def test_errors_name_node_operator_and_attribute(nodes, inputs, inits, opset, outputs, message) -> None:  # type: ignore[no-untyped-def]
    text = _load_error(nodes, inputs, inits, opset, outputs)
    assert message in text
    assert "node " in text


# ---- every element type through one chain of movement operators ---------------------------------

ALL_NUMPY_TYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                   "int64", "uint64", "bool"]


def _chain_oracle(x: np.ndarray) -> np.ndarray:
    y = x[:, :, 0:2]
    y = np.take(y, [2, 0], axis=1)
    y = np.pad(y, [(0, 0), (1, 0), (0, 1)])
    y = y.transpose(2, 0, 1).reshape(6, 3)
    y = np.tile(y, (1, 2))
    a, b = np.split(y, 2, axis=0)
    y = np.concatenate([b, a], axis=1)
    y = np.broadcast_to(y, (2, 3, 12))
    return y.reshape(2, 36)


@pytest.mark.parametrize("backends", [["CpuRef"], ["CpuAcc", "CpuRef"]], ids=["CpuRef", "CpuAcc+CpuRef"])
@pytest.mark.parametrize("type_name", ALL_NUMPY_TYPES)
def test_every_element_type_flows_through_movement_operators(runtime: Any, type_name: str, backends) -> None:
    from plugnn.tensor import DataType

    dtype = DataType.from_any(type_name).numpy_dtype
    x = (RNG.standard_normal((2, 3, 4)) * 5).astype(np.float32).astype(dtype)
    nodes = [
        N("Slice", ["x", "s0", "e2", "a2"], ["t1"]), N("Gather", ["t1", "idx"], ["t2"], axis=1),
        N("Pad", ["t2", "pads"], ["t3"]), N("Transpose", ["t3"], ["t4"], perm=[2, 0, 1]),
        N("Reshape", ["t4", "shape63"], ["t5"]), N("Tile", ["t5", "reps"], ["t6"]),
        N("Split", ["t6"], ["p", "q"], axis=0), N("Concat", ["q", "p"], ["t7"], axis=1),
        N("Expand", ["t7", "shape"], ["t8"]), N("Unsqueeze", ["t8", "a0"], ["t9"]),
        N("Squeeze", ["t9", "a0"], ["t10"]), N("Flatten", ["t10"], ["t11"], axis=1), N("Identity", ["t11"], ["y"]),
    ]
    inits = {"s0": i64(0), "e2": i64(2), "a2": i64(2), "idx": i64(2, 0), "pads": i64(0, 1, 0, 0, 0, 1),
             "shape63": i64(6, 3), "reps": i64(1, 2), "shape": i64(2, 3, 12), "a0": i64(0)}
    model = make_model(nodes, {"x": ([2, 3, 4], helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))}, ["y"], inits,
                       opset=17)
    network = plugnn.onnx.load(model)
    with runtime.load_network(plugnn.optimize(network, runtime, backends)) as loaded:
        y = np.asarray(loaded.run({"x": x})["y"])
    expected = _chain_oracle(x)
    assert y.dtype == expected.dtype and y.shape == expected.shape
    assert y.tobytes() == np.ascontiguousarray(expected).tobytes()
