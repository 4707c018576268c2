"""The dynamic path (plugnn.dynamic): control flow, sequences and optionals, values the import
needs computed at run time, data-dependent shapes feeding further nodes; and its errors.

Models are built with onnx.helper and run through plugnn.onnx.backend (CpuRef) and
plugnn.InferenceSession, against onnxruntime (models it runs) or ONNX's reference evaluator
(sequences, Scan-8, what onnxruntime refuses). Tolerances: rtol 1e-5, atol 1e-6 (float32 layers
against float32 NumPy/onnxruntime); indices, counts and copied values exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError, RunError
from plugnn.onnx import backend
from plugnn.onnx.context import DynamicModelError

N = helper.make_node
F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RTOL, ATOL = 1e-5, 1e-6


def vi(name: str, elem: int, shape: Sequence[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes: list[Any], name: str, inputs: list[Any], outputs: list[Any],
          inits: dict[str, np.ndarray] | None = None) -> Any:
    return helper.make_graph(nodes, name, inputs, outputs,
                             [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])


def model(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = 17,
          inits: dict[str, np.ndarray] | None = None) -> Any:
    ir = {8: 3, 9: 4, 11: 6, 13: 7, 16: 8, 17: 8}.get(opset, 8)
    return helper.make_model(graph(nodes, "dynamic", inputs, outputs, inits),
                             opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def plugnn_run(m: Any, feeds: dict[str, Any]) -> list[Any]:
    rep = backend.prepare(m, backends=["CpuRef"])
    return list(rep.run(feeds))


def ort_run(m: Any, feeds: dict[str, Any]) -> list[Any]:
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def reference_run(m: Any, feeds: dict[str, Any]) -> list[Any]:
    return list(ReferenceEvaluator(m).run(None, feeds))


def same(actual: Any, expected: Any, what: str = "output") -> None:
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{what}: {actual!r} vs {expected!r}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            same(a, e, f"{what}[{k}]")
        return
    if expected is None:
        assert actual is None, f"{what}: {actual!r}, expected None"
        return
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"{what}: {type(actual).__name__}"
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, \
        f"{what}: {actual.dtype} {actual.shape}, expected {expected.dtype} {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


def compare(m: Any, feeds: dict[str, Any], oracle: Any = ort_run) -> None:
    for k, (a, e) in enumerate(zip(plugnn_run(m, feeds), oracle(m, feeds))):
        same(a, e, f"output {k}")


# ---- If -----------------------------------------------------------------------------------------


def if_model(then_shape: Sequence[int] = (2, 3), else_shape: Sequence[int] = (2, 3)) -> Any:
    """y = x + b when cond (b an outer-scope capture), else x * 2 (reshaped to else_shape)."""
    then_branch = graph([N("Add", ["x", "b"], ["t"])], "then", [], [vi("t", F32, list(then_shape))])
    else_branch = graph([N("Mul", ["x", "two"], ["m"]), N("Reshape", ["m", "shape"], ["e"])], "else", [],
                        [vi("e", F32, list(else_shape))])
    return model([N("If", ["cond"], ["y"], name="branchy", then_branch=then_branch, else_branch=else_branch)],
                 [vi("cond", BOOL, []), vi("x", F32, [2, 3])], [vi("y", F32, None)],
                 inits={"b": np.arange(3, dtype=np.float32), "two": np.float32(2),
                        "shape": np.array(else_shape, np.int64)})


@pytest.mark.parametrize("condition", [True, False])
def test_if_with_a_run_time_condition_runs_the_chosen_branch(condition: bool) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    compare(if_model(), {"cond": np.array(condition), "x": x})


def test_if_branches_of_different_shapes() -> None:
    m = if_model(else_shape=(6,))
    x = np.ones((2, 3), np.float32)
    rep = backend.prepare(m, backends=["CpuRef"])
    assert rep.run({"cond": np.array(True), "x": x})[0].shape == (2, 3)
    assert rep.run({"cond": np.array(False), "x": x})[0].shape == (6,)
    text = rep.dynamic.explain()
    assert "then_branch" in text and "else_branch" in text and "CpuRef" in text


def test_if_with_a_condition_known_at_import_is_inlined_in_a_static_network() -> None:
    m = if_model()
    cond = m.graph.input[0].name
    del m.graph.input[0]
    m.graph.initializer.append(numpy_helper.from_array(np.array(False), cond))
    network = plugnn.onnx.load(m)
    assert any("else_branch" in layer.name for layer in network.layers)
    compare(m, {"x": np.full((2, 3), 3, np.float32)})


def test_a_branch_of_another_shape_than_declared_names_the_node() -> None:
    m = if_model(then_shape=(2, 4))  # the then branch computes [2, 3]
    with pytest.raises(RunError, match=r"node 'branchy' \(#0, If\).*then_branch.*declared float \[2, 4\]"):
        plugnn_run(m, {"cond": np.array(True), "x": np.ones((2, 3), np.float32)})


# ---- Loop ---------------------------------------------------------------------------------------------


def loop_model(nested_if: bool = False) -> Any:
    """Sum x * scale into a carried value while the sum stays below `limit` (early exit), at most M
    iterations; a scan output collects every partial sum. `nested_if`: the body adds through an If
    on the iteration's parity (control flow inside control flow)."""
    step = [N("Mul", ["x", "scale"], ["inc"])]
    if nested_if:
        two = graph([N("Add", ["inc", "inc"], ["twice"])], "odd", [], [vi("twice", F32, [3])])
        one = graph([N("Identity", ["inc"], ["once"])], "even", [], [vi("once", F32, [3])])
        step += [N("Mod", ["i", "two_i"], ["parity"]), N("Cast", ["parity"], ["odd"], to=BOOL),
                 N("If", ["odd"], ["add"], then_branch=two, else_branch=one)]
    else:
        step += [N("Identity", ["inc"], ["add"])]
    body = graph(step + [N("Add", ["s_in", "add"], ["s_out"]), N("ReduceSum", ["s_out"], ["total"], keepdims=0),
                         N("Less", ["total", "limit"], ["c_out"]), N("Identity", ["s_out"], ["partial"])],
                 "body", [vi("i", I64, []), vi("c_in", BOOL, []), vi("s_in", F32, [3])],
                 [vi("c_out", BOOL, []), vi("s_out", F32, [3]), vi("partial", F32, [3])])
    return model([N("Loop", ["M", "cond", "s0"], ["s", "partials"], name="summing", body=body)],
                 [vi("M", I64, []), vi("cond", BOOL, []), vi("s0", F32, [3]), vi("x", F32, [3])],
                 [vi("s", F32, [3]), vi("partials", F32, None)],
                 inits={"scale": np.float32(0.5), "limit": np.float32(20), "two_i": np.int64(2)})


@pytest.mark.parametrize("trips", [0, 1, 3, 100], ids=lambda t: f"M={t}")
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested_if"])
def test_loop_with_early_exit_zero_iterations_and_outer_scope_values(trips: int, nested: bool) -> None:
    feeds = {"M": np.array(trips, np.int64), "cond": np.array(True), "s0": np.zeros(3, np.float32),
             "x": np.array([1, 2, 3], np.float32)}
    m = loop_model(nested)
    out = plugnn_run(m, feeds)
    for k, (a, e) in enumerate(zip(out, ort_run(m, feeds))):
        same(a, e, f"output {k}")
    if trips == 100:  # the condition ended it early
        assert 1 < out[1].shape[0] < 100


def test_a_static_loop_body_is_imported_once_and_rebound() -> None:
    m = loop_model()
    rep = backend.prepare(m, backends=["CpuRef"])
    feeds = {"M": np.array(5, np.int64), "cond": np.array(True), "s0": np.zeros(3, np.float32),
             "x": np.array([0.1, 0.1, 0.1], np.float32)}
    rep.run(feeds)
    made = rep.dynamic.segments_made
    rep.run(feeds)
    assert made <= 2 and rep.dynamic.segments_made == made
    assert "body" in rep.dynamic.explain()


def test_loop_without_trip_count_or_condition_is_refused() -> None:
    body = graph([N("Identity", ["c"], ["c2"]), N("Identity", ["v"], ["v2"])], "b",
                 [vi("i", I64, []), vi("c", BOOL, []), vi("v", F32, [1])], [vi("c2", BOOL, []), vi("v2", F32, [1])])
    m = model([N("Loop", ["", "", "v0"], ["v"], body=body)], [vi("v0", F32, [1])], [vi("v", F32, [1])])
    with pytest.raises(RunError, match=r"node #0 \(Loop, unnamed, output 'v'\): it has neither a trip count "
                                       r"\(M\) nor a condition"):
        plugnn_run(m, {"v0": np.ones(1, np.float32)})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # ONNX's node-test generators overflow casts on purpose
def test_loop16_with_an_optional_sequence_matches_the_reference() -> None:
    from onnx.backend.test.loader import load_node_model_tests

    case = next(c for c in load_node_model_tests() if c.name == "test_loop16_seq_none")
    inputs, expected = case.data_sets[0]
    feeds = dict(zip([i.name for i in case.model.graph.input], inputs))
    same(plugnn_run(case.model, feeds)[0], expected[0])


# ---- Scan -----------------------------------------------------------------------------------------------


def test_scan_directions_and_axes() -> None:
    body = graph([N("Add", ["acc", "row"], ["acc2"]), N("Mul", ["acc2", "other"], ["out"])], "scan_body",
                 [vi("acc", F32, [2]), vi("row", F32, [2]), vi("other", F32, [2])],
                 [vi("acc2", F32, [2]), vi("out", F32, [2])])
    m = model([N("Scan", ["init", "xs", "ys"], ["final", "outs"], num_scan_inputs=2, body=body,
                 scan_input_axes=[1, 0], scan_input_directions=[1, 0], scan_output_axes=[1],
                 scan_output_directions=[1])],
              [vi("init", F32, [2]), vi("xs", F32, [2, 4]), vi("ys", F32, [4, 2])],
              [vi("final", F32, [2]), vi("outs", F32, [2, 4])], opset=16)
    rng = np.random.default_rng(5)
    compare(m, {"init": np.zeros(2, np.float32), "xs": rng.standard_normal((2, 4)).astype(np.float32),
                "ys": rng.standard_normal((4, 2)).astype(np.float32)})


def test_scan8_runs_every_batch() -> None:
    body = graph([N("Add", ["s", "x"], ["s2"]), N("Identity", ["s2"], ["y"])], "b",
                 [vi("s", F32, [2]), vi("x", F32, [2])], [vi("s2", F32, [2]), vi("y", F32, [2])])
    m = model([N("Scan", ["", "s0", "xs"], ["s", "ys"], num_scan_inputs=1, body=body, directions=[1])],
              [vi("s0", F32, [3, 2]), vi("xs", F32, [3, 4, 2])], [vi("s", F32, [3, 2]), vi("ys", F32, [3, 4, 2])],
              opset=8)
    feeds = {"s0": np.ones((3, 2), np.float32),
             "xs": np.arange(24, dtype=np.float32).reshape(3, 4, 2)}
    compare(m, feeds)  # onnx.reference has no Scan-8 (no `directions`)


# ---- values the import needs, computed at run time; data-dependent shapes -------------------------------


def test_a_value_computed_at_run_time_ends_a_segment_and_the_next_binds_it() -> None:
    """TopK's k and Slice's end come from the data; Reshape's shape from a NonZero count."""
    m = model([N("ReduceMax", ["n"], ["k"], keepdims=1), N("TopK", ["x", "k"], ["v", "i"]),
               N("Slice", ["x", "zero", "k"], ["head"]),
               N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["nz_shape"]),
               N("Reshape", ["nz", "flat"], ["nz_flat"])],
              [vi("x", F32, [6]), vi("n", I64, [2])],
              [vi("v", F32, None), vi("i", I64, None), vi("head", F32, None), vi("nz_flat", I64, None)],
              inits={"zero": np.array([0], np.int64), "flat": np.array([-1], np.int64)})
    rep = backend.prepare(m, backends=["CpuRef"])
    x = np.array([0, 3, 1, 0, 5, 2], np.float32)
    for n in ([1, 3], [2, 0], [1, 3]):
        feeds = {"x": x, "n": np.array(n, np.int64)}
        for k, (a, e) in enumerate(zip(rep.run(feeds), ort_run(m, feeds))):
            same(a, e, f"n={n} output {k}")
    with pytest.raises(DynamicModelError, match=r"TopK.*computed at run time.*dynamic path"):
        plugnn.onnx.load(m)


def test_shape_parameters_computed_at_run_time() -> None:
    """Range, Expand, Pad, Tile, OneHot, Split and Resize whose shape parameters come from the data
    (a ReduceMax of an input): each segment ends where the value is needed, the next binds it."""
    m = model([N("ReduceMax", ["n"], ["m"], keepdims=0), N("Range", ["zero", "m", "one"], ["r"]),
               N("Reshape", ["m", "one_d"], ["m1"]), N("Concat", ["two", "m1"], ["shape"], axis=0),
               N("Expand", ["x", "shape"], ["expanded"]),
               N("Concat", ["zero1", "m1"], ["pads"], axis=0), N("Pad", ["x", "pads"], ["padded"]),
               N("Concat", ["one1", "m1"], ["reps"], axis=0), N("Tile", ["x2", "reps"], ["tiled"]),
               N("OneHot", ["idx", "m", "onoff"], ["hot"]),
               N("Sub", ["seven", "m1"], ["rest"]), N("Concat", ["rest", "m1"], ["sizes"], axis=0),
               N("Split", ["col", "sizes"], ["a", "b"]),
               N("Concat", ["two", "m1"], ["out_size"], axis=0),
               N("Resize", ["x2", "", "", "out_size"], ["resized"], mode="nearest")],
              [vi("n", I64, [3]), vi("x", F32, [1]), vi("x2", F32, [2, 1]), vi("idx", I64, [3]), vi("col", F32, [7])],
              [vi(o, F32 if o not in ("r",) else I64, None)
               for o in ("r", "expanded", "padded", "tiled", "hot", "a", "b", "resized")],
              opset=13, inits={"zero": np.int64(0), "one": np.int64(1), "one_d": np.array([1], np.int64),
                               "two": np.array([2], np.int64), "zero1": np.array([0], np.int64),
                               "one1": np.array([1], np.int64), "onoff": np.array([0, 1], np.float32),
                               "seven": np.array([7], np.int64)})
    rep = backend.prepare(m, backends=["CpuRef"])
    rng = np.random.default_rng(4)
    for n in ([2, 5, 1], [3, 0, 6], [2, 5, 1]):
        feeds = {"n": np.array(n, np.int64), "x": np.array([1.5], np.float32),
                 "x2": rng.standard_normal((2, 1)).astype(np.float32), "idx": np.array([0, 2, 4], np.int64),
                 "col": np.arange(7, dtype=np.float32)}
        for k, (a, e) in enumerate(zip(rep.run(feeds), ort_run(m, feeds))):
            same(a, e, f"n={n} output {k}")


def test_a_data_dependent_output_feeding_layers_takes_every_count_in_one_symbolic_segment() -> None:
    """The segment after a NonZero is imported for the first count; at the second count the
    axis that changed becomes a symbol and that one symbolic segment serves every later count
    (re-sized, not imported again)."""
    m = model([N("NonZero", ["x"], ["nz"]), N("Transpose", ["nz"], ["t"]), N("Cast", ["t"], ["tf"], to=F32),
               N("ReduceSum", ["tf"], ["s"], axes=[0], keepdims=0)],
              [vi("x", F32, [3, 4])], [vi("s", F32, [2]), vi("t", I64, None)], opset=11)
    rep = backend.prepare(m, backends=["CpuRef"])
    rng = np.random.default_rng(2)
    masks = [np.arange(12).reshape(3, 4) < c for c in (6, 9, 2, 11, 4, 7)]
    masks.append(masks[0])
    masks.append(np.zeros((3, 4), bool))  # no element: a count of 0 is no symbol, specialized on its own
    masks = [m[:, rng.permutation(4)] for m in masks]
    counts = []
    for mask in masks:
        x = (mask * 2.0).astype(np.float32)
        compare_out = zip(rep.run({"x": x}), ort_run(m, {"x": x}))
        for k, (a, e) in enumerate(compare_out):
            same(a, e, f"output {k}")
        counts.append(rep.dynamic.segments_made)
    # the NonZero segment, the next one at the first count, the symbolic one; then the empty count
    assert counts == [2, 3, 3, 3, 3, 3, 3, 4]
    text = rep.dynamic.explain()
    assert text.count("DataDependent") == 1 and "with symbols nz:1" in text


def test_plain_load_says_which_node_needs_the_dynamic_path() -> None:
    with pytest.raises(DynamicModelError, match=r"node 'summing' \(#0, Loop\): a Loop runs its body .*dynamic path"):
        plugnn.onnx.load(loop_model())
    with pytest.raises(DynamicModelError, match=r"node #1 \(Transpose.*data-dependent layer"):
        plugnn.onnx.load(model([N("NonZero", ["x"], ["nz"]), N("Transpose", ["nz"], ["t"])],
                               [vi("x", F32, [3])], [vi("t", I64, None)]))


def test_errors_inside_a_subgraph_name_the_node_path() -> None:
    body = graph([N("Identity", ["c"], ["c2"]), N("Gelu", ["v"], ["v2"], approximate="cubic")], "b",
                 [vi("i", I64, []), vi("c", BOOL, []), vi("v", F32, [1])], [vi("c2", BOOL, []), vi("v2", F32, [1])])
    m = model([N("Loop", ["M", "", "v0"], ["v"], name="outer", body=body)], [vi("M", I64, []), vi("v0", F32, [1])],
              [vi("v", F32, [1])], opset=20)
    with pytest.raises(ModelError, match=r"node 'outer' \(#0, Loop\) body: node #1 \(Gelu.*approximate"):
        plugnn_run(m, {"M": np.array(2, np.int64), "v0": np.ones(1, np.float32)})


# ---- sequences and optionals -----------------------------------------------------------------------------------


def sequence_model() -> Any:
    seq_f = helper.make_tensor_sequence_value_info
    nodes = [N("SplitToSequence", ["x"], ["parts"], axis=1, keepdims=0),
             N("SequenceInsert", ["parts", "extra", "front"], ["more"]),
             N("SequenceErase", ["more", "last"], ["fewer"]),
             N("SequenceLength", ["fewer"], ["count"]),
             N("SequenceAt", ["fewer", "pos"], ["picked"]),
             N("ConcatFromSequence", ["fewer"], ["stacked"], axis=0, new_axis=1),
             N("ConcatFromSequence", ["seq_in"], ["joined"], axis=0),
             N("SequenceConstruct", ["picked", "extra"], ["pair"])]
    return model(nodes, [vi("x", F32, [2, 3]), seq_f("seq_in", F32, None), vi("pos", I64, [])],
                 [vi("count", I64, []), vi("picked", F32, None), vi("stacked", F32, None), vi("joined", F32, None),
                  seq_f("pair", F32, None)],
                 inits={"extra": np.array([7, 8], np.float32), "front": np.array(0, np.int64),
                        "last": np.array(-1, np.int64)})


@pytest.mark.parametrize("pos", [0, 2, -1])
def test_sequence_operators_match_the_reference(pos: int) -> None:
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3),
             "seq_in": [np.ones(2, np.float32), np.zeros(3, np.float32)], "pos": np.array(pos, np.int64)}
    compare(sequence_model(), feeds, reference_run)


def test_a_sequence_position_out_of_range_names_node_and_operator() -> None:
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "seq_in": [np.ones(2, np.float32)],
             "pos": np.array(5, np.int64)}
    with pytest.raises(RunError, match=r"node #4 \(SequenceAt, unnamed, output 'picked'\): position 5 is out of "
                                       r"range for a sequence of 3 tensors \(valid: \[-3, 2\]\)"):
        plugnn_run(sequence_model(), feeds)


def test_optionals_through_an_inference_session() -> None:
    opt = helper.make_tensor_type_proto(F32, [2])
    optional = helper.make_optional_type_proto(opt)
    m = model([N("OptionalHasElement", ["o"], ["has"]),
               N("If", ["has"], ["y"], then_branch=graph([N("OptionalGetElement", ["o"], ["got"])], "t", [],
                                                        [vi("got", F32, [2])]),
                 else_branch=graph([N("Identity", ["zeros"], ["z"])], "e", [], [vi("z", F32, [2])])),
               N("Optional", ["y"], ["wrapped"]), N("Optional", [], ["nothing"], type=opt)],
              [helper.make_value_info("o", optional)],
              [vi("has", BOOL, []), vi("y", F32, [2]), helper.make_value_info("wrapped", optional),
               helper.make_value_info("nothing", optional)], opset=18,
              inits={"zeros": np.zeros(2, np.float32)})
    with plugnn.InferenceSession(m, backends=["CpuRef"]) as session:
        assert [a.type for a in session.get_inputs()] == ["optional(tensor(float))"]
        has, y, wrapped, nothing = session.run(None, {"o": np.array([1, 2], np.float32)})
        assert bool(has) and nothing is None
        same(y, np.array([1, 2], np.float32))
        same(wrapped, np.array([1, 2], np.float32))
        has, y, _, _ = session.run(None, {"o": None})
        assert not bool(has)
        same(y, np.zeros(2, np.float32))
        assert session.dynamic is not None


def test_reading_an_empty_optional_names_the_node() -> None:
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, [2]))
    m = model([N("OptionalGetElement", ["o"], ["y"], name="get")], [helper.make_value_info("o", optional)],
              [vi("y", F32, [2])], opset=18)
    with pytest.raises(RunError, match=r"node 'get' \(#0, OptionalGetElement\): the optional is empty"):
        plugnn_run(m, {"o": None})


def test_session_takes_and_returns_sequences() -> None:
    seq = helper.make_tensor_sequence_value_info
    m = model([N("SequenceMap", ["s"], ["doubled"], body=graph([N("Add", ["e", "e"], ["d"])], "map",
                                                              [vi("e", F32, None)], [vi("d", F32, None)]))],
              [seq("s", F32, None)], [seq("doubled", F32, None)])
    with plugnn.InferenceSession(m, backends=["CpuRef"]) as session:
        items = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
        (out,) = session.run(None, {"s": items})
        same(out, [2 * item for item in items])
        with pytest.raises(plugnn.InputError, match=r"input 's' is a sequence .*pass a list"):
            session.run(None, {"s": items[0]})


# ---- data-dependent layers in a plain Network ------------------------------------------------------------------


def test_a_network_returns_data_dependent_outputs_in_their_actual_shapes() -> None:
    net = plugnn.Network("nz")
    x = net.add_input("x", (4,), "float32")
    (y,) = net.add_data_dependent("non_zero", [x])
    net.add_output(y, "y")
    with pytest.raises(plugnn.NetworkError, match=r"reads 'datadependent_\d+'.*data-dependent layer .*graph output"):
        net.add_add(y, y)
    with plugnn.Runtime() as runtime:
        loaded = runtime.load_network(plugnn.optimize(net, runtime, ["CpuRef"]))
        for values in ([0, 1, 0, 2], [0, 0, 0, 0], [3, 3, 3, 3]):
            array = np.array(values, np.float32)
            same(loaded.run({"x": array})["y"], np.array(np.nonzero(array), np.int64))
        with pytest.raises(plugnn.InputError, match="data-dependent shape"):
            loaded.run({"x": np.ones(4, np.float32)}, outputs={"y": np.empty((1, 4), np.int64)})


def test_a_constant_output_read_by_a_layer_is_not_rebound() -> None:
    """A constant exported as an output and read by a layer keeps its values (it is copied out)."""
    net = plugnn.Network("constant_out")
    x = net.add_input("x", (3,), "float32")
    c = net.add_constant(np.array([1, 2, 3], np.float32), name="c")
    net.add_output(c, "c_out")
    net.add_output(net.add_add(x, c), "y")
    with plugnn.Runtime() as runtime:
        loaded = runtime.load_network(plugnn.optimize(net, runtime, ["CpuRef"]))
        for _ in range(2):
            out = loaded.run({"x": np.ones(3, np.float32)})
            same(out["y"], np.array([2, 3, 4], np.float32))
            same(out["c_out"], np.array([1, 2, 3], np.float32))


# ---- import errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("node, inputs, inits, message", [
    (N("Unique", ["x"], ["y"], sorted=2), [vi("x", F32, [4])], {}, r"attribute 'sorted' = 2 is not supported"),
    (N("Unique", ["x"], ["y"], axis=1), [vi("x", F32, [4])], {}, r"attribute 'axis' = 1 is out of range for rank 1"),
    (N("Compress", ["x", "c"], ["y"], axis=-3), [vi("x", F32, [2, 3]), vi("c", BOOL, [2])], {},
     r"attribute 'axis' = -3 is out of range for rank 2"),
    (N("Compress", ["x", "c"], ["y"]), [vi("x", F32, [2, 3]), vi("c", BOOL, [7])], {},
     r"condition has 7 elements, more than .*6"),
    (N("NonMaxSuppression", ["b", "s"], ["y"], center_point_box=2), [vi("b", F32, [1, 3, 4]), vi("s", F32, [1, 1, 3])],
     {}, r"attribute 'center_point_box' = 2 is not supported"),
    (N("NonMaxSuppression", ["b", "s"], ["y"]), [vi("b", F32, [1, 3, 5]), vi("s", F32, [1, 1, 3])], {},
     r"boxes must be \[B, N, 4\]"),
    (N("If", ["c"], ["y"], then_branch=graph([N("Identity", ["x"], ["t"])], "t", [], [vi("t", F32, [2])])),
     [vi("x", F32, [2])], {"c": np.array(False)},
     r"node #0 \(If, unnamed, output 'y'\): attribute 'else_branch' is missing"),
    (N("Loop", ["m", "", "x"], ["y"], body=graph([], "b", [], []), frobnicate=1),
     [vi("m", I64, []), vi("x", F32, [1])], {}, r"attribute 'frobnicate' is not supported by plugnn's Loop import"),
])
def test_import_errors_name_node_operator_and_attribute(node: Any, inputs: list[Any], inits: dict[str, Any],
                                                         message: str) -> None:
    m = model([node], inputs, [vi("y", F32, None)], opset=13, inits=inits)
    dtypes = {F32: np.float32, BOOL: bool, I64: np.int64}
    feeds = {i.name: np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim], dtypes[i.type.tensor_type.elem_type])
             for i in m.graph.input}
    with pytest.raises(ModelError, match=message):
        plugnn_run(m, feeds)
