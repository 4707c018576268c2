"""String tensors on plugnn's dynamic path (plugnn.dynamic.strings): the string operators, Equal,
Cast and CastLike on strings, string constants, graphs mixing strings and numeric layers, the
InferenceSession with string inputs and outputs, and every malformed input we could think of.

Oracles: onnxruntime where it runs the model, ONNX's reference evaluator or NumPy otherwise
(onnxruntime's StringNormalizer fails to start without the en_US.UTF-8 locale installed); strings,
booleans and counts compared exactly, float32 layers at rtol 1e-6.
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
from plugnn.errors import InputError, ModelError, RunError
from plugnn.onnx import backend
from plugnn.onnx.context import DynamicModelError

N = helper.make_node
F32, I64, BOOL, STR = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING


def vi(name: str, elem: int, shape: Sequence[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = 20,
          inits: dict[str, np.ndarray] | None = None) -> Any:
    init = [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()]
    return helper.make_model(helper.make_graph(nodes, "strings", inputs, outputs, init),
                             opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def strings(*items: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    array = np.empty(len(items), object)
    array[:] = list(items)
    return array.reshape(shape) if shape is not None else array


def run(m: Any, feeds: dict[str, Any]) -> list[Any]:
    return list(backend.prepare(m, backends=["CpuRef"]).run(feeds))


def reference(m: Any, feeds: dict[str, Any]) -> list[Any]:
    return list(ReferenceEvaluator(m).run(None, feeds))


def onnxruntime(m: Any, feeds: dict[str, Any]) -> list[Any]:
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == np.asarray(want).shape
    if np.asarray(want).dtype.kind in "OU":  # ONNX's reference returns some strings as str_ arrays
        assert got.dtype == object
        assert got.tolist() == np.asarray(want).tolist()
    else:
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


# ---- mixing strings and numeric layers ---------------------------------------------------------


def _mixed() -> Any:
    """StringNormalizer -> Equal with a constant word -> Where over float data -> Relu (a layer)."""
    nodes = [N("StringNormalizer", ["words"], ["norm"], case_change_action="LOWER", stopwords=["the"]),
             N("Equal", ["norm", "target"], ["hit"]),
             N("Where", ["hit", "x", "zero"], ["picked"]),
             N("Mul", ["picked", "x"], ["square"]),
             N("Relu", ["square"], ["y"])]
    return model(nodes, [vi("words", STR, [5]), vi("x", F32, [4])],
                 [vi("norm", STR, [4]), vi("hit", BOOL, [4]), vi("y", F32, [4])],
                 inits={"target": strings("cat"), "zero": np.zeros(1, np.float32)})


def _mixed_oracle(words: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    """NumPy: the words lowered without the stopword, compared with "cat", x squared where equal."""
    norm = strings(*[w.lower() for w in words if w.lower() != "the"])
    hit = np.array([w == "cat" for w in norm])
    return [norm, hit, np.maximum(np.where(hit, x, 0) * x, 0).astype(np.float32)]


def test_strings_mix_with_numeric_layers() -> None:
    m = _mixed()
    feeds = {"words": strings("The", "CAT", "dog", "Cat", "bird"), "x": np.array([1, -2, 3, -4], np.float32)}
    got = run(m, feeds)
    for g, w in zip(got, _mixed_oracle(feeds["words"], feeds["x"])):
        same(g, w)
    assert got[1].tolist() == [True, False, True, False]


def test_numeric_segments_run_on_backends() -> None:
    m = _mixed()
    rep = backend.prepare(m, backends=["CpuRef"])
    rep.run({"words": strings("the", "cat", "a", "b", "c"), "x": np.ones(4, np.float32)})
    text = rep.dynamic.explain()
    assert "runs in the runtime" in text and "StringNormalizer" in text
    assert "CpuRef" in text  # Where, Mul and Relu are layers of a segment


def test_inference_session_takes_and_returns_strings() -> None:
    m = _mixed()
    session = plugnn.InferenceSession(m.SerializeToString(), backends=["CpuRef"])
    assert session.get_inputs()[0].type == "tensor(string)"
    feeds = {"words": strings("a", "Cat", "the", "cat", "x"), "x": np.array([5, 6, -7, 8], np.float32)}
    got = session.run(None, feeds)
    want = _mixed_oracle(feeds["words"], feeds["x"])
    for g, w in zip(got, want):
        same(g, w)
    with pytest.raises(InputError, match="'words' has dtype int64"):
        session.run(None, {"words": np.arange(5), "x": feeds["x"]})


def test_plugnn_onnx_load_says_the_model_needs_the_dynamic_path() -> None:
    with pytest.raises(DynamicModelError, match="input 'words' is a string tensor"):
        plugnn.onnx.load(_mixed())


# ---- the operators against ONNX's reference -------------------------------------------------


@pytest.mark.parametrize("delimiter,maxsplit", [(None, None), (" ", None), (",", 1), ("", 0), ("ab", 3)])
def test_string_split(delimiter: str | None, maxsplit: int | None) -> None:
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit)) if v is not None}
    m = model([N("StringSplit", ["x"], ["parts", "count"], **attrs)], [vi("x", STR, [2, 2])],
              [vi("parts", STR, None), vi("count", I64, [2, 2])])
    feeds = {"x": strings("a b  c", ",x,,y", "abab ab", "", shape=(2, 2))}
    for g, w in zip(run(m, feeds), reference(m, feeds)):
        same(g, w)


def test_string_concat_broadcasts_and_keeps_unicode() -> None:
    m = model([N("StringConcat", ["x", "y"], ["z"])], [vi("x", STR, [2, 1]), vi("y", STR, [3])],
              [vi("z", STR, [2, 3])])
    feeds = {"x": strings("é", "", shape=(2, 1)), "y": strings("a", "中", "")}
    same(run(m, feeds)[0], reference(m, feeds)[0])


def test_regex_full_match_against_onnxruntime() -> None:
    m = model([N("RegexFullMatch", ["x"], ["y"], pattern=r"[a-z]+\d{2}")], [vi("x", STR, [4])], [vi("y", BOOL, [4])])
    feeds = {"x": strings("ab12", "ab123", "AB12", "x99")}
    same(run(m, feeds)[0], onnxruntime(m, feeds)[0])


def test_regex_full_match_is_linear_time_on_a_redos_pattern() -> None:
    """(a+)+$ on 32 a's and a b: Python's re backtracks through 2^32 ways (past 30 s); RE2 does
    not backtrack. The work is bounded by the input, so this test needs no clock."""
    m = model([N("RegexFullMatch", ["x"], ["y"], pattern="(a+)+$")], [vi("x", STR, [3])], [vi("y", BOOL, [3])])
    feeds = {"x": strings("a" * 32 + "b", "a" * 33, "a" * 5000 + "!")}
    got = run(m, feeds)[0]
    assert got.tolist() == [False, True, False]
    same(got, onnxruntime(m, feeds)[0])


def test_regex_full_match_follows_re2_like_onnxruntime() -> None:
    """RE2's classes as onnxruntime reads them: \\w is ASCII, Unicode classes spelled \\pL."""
    m = model([N("RegexFullMatch", ["x"], ["y"], pattern=r"\w+|\pL+")], [vi("x", STR, [4])], [vi("y", BOOL, [4])])
    feeds = {"x": strings("abc_1", "héllo", "中文", "a b")}
    same(run(m, feeds)[0], onnxruntime(m, feeds)[0])


def test_regex_backreferences_are_refused_as_re2_does() -> None:
    m = model([N("RegexFullMatch", ["x"], ["y"], name="match", pattern=r"(a)\1")], [vi("x", STR, [1])],
              [vi("y", BOOL, [1])])
    with pytest.raises(ModelError, match=r"node 'match' .*attribute 'pattern' = .* is not a regular expression RE2 can "
                                         r"compile: invalid escape sequence"):
        run(m, {"x": strings("aa")})


def test_string_normalizer_case_insensitive_stopwords_two_dims() -> None:
    m = model([N("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", stopwords=["MonDay"],
                 locale="en_US")], [vi("x", STR, [1, 4])], [vi("y", STR, None)], opset=17)
    got = run(m, {"x": strings("monday", "Tuesday", "MONDAY", "straße", shape=(1, 4))})[0]
    assert got.shape == (1, 2) and got.tolist() == [["TUESDAY", "STRASSE"]]


def test_string_normalizer_all_removed_gives_one_empty_string() -> None:
    m = model([N("StringNormalizer", ["x"], ["y"], is_case_sensitive=1, stopwords=["a"])],
              [vi("x", STR, [1, 2])], [vi("y", STR, None)], opset=17)
    assert run(m, {"x": strings("a", "a", shape=(1, 2))})[0].tolist() == [[""]]


@pytest.mark.parametrize("source,to", [(F32, F32), (F32, TensorProto.DOUBLE), (TensorProto.DOUBLE, F32),
                                       (I64, I64), (I64, TensorProto.INT8), (TensorProto.INT32, F32)])
def test_cast_numeric_to_string_and_back(source: int, to: int) -> None:
    m = model([N("Cast", ["x"], ["s"], to=STR), N("Cast", ["s"], ["back"], to=to)],
              [vi("x", source, [5])], [vi("s", STR, [5]), vi("back", to, [5])])
    values = [0, 1.5, -3, 100, 0.1] if source in (F32, TensorProto.DOUBLE) else [0, 1, -3, 100, 7]
    feeds = {"x": np.array(values, helper.tensor_dtype_to_np_dtype(source))}
    for g, w in zip(run(m, feeds), reference(m, feeds)):
        same(g, w)


def test_cast_from_string_reads_special_values() -> None:
    m = model([N("Cast", ["s"], ["y"], to=F32)], [vi("s", STR, [5])], [vi("y", F32, [5])])
    got = run(m, {"s": strings("1e3", " -2.5", "INF", "-inf", "NaN")})[0]
    np.testing.assert_array_equal(got[:4], np.array([1000, -2.5, np.inf, -np.inf], np.float32))
    assert np.isnan(got[4])


def test_castlike_to_string_and_constant_strings() -> None:
    like = helper.make_tensor("like", STR, [1], [b"x"])
    nodes = [N("Constant", [], ["suffix"], value_strings=["!", "?"]),
             N("Constant", [], ["like"], value=like),
             N("CastLike", ["n", "like"], ["text"]),
             N("StringConcat", ["text", "suffix"], ["y"])]
    m = model(nodes, [vi("n", I64, [2])], [vi("y", STR, [2])])
    feeds = {"n": np.array([7, -12], np.int64)}
    same(run(m, feeds)[0], reference(m, feeds)[0])


def test_str_arrays_are_accepted_as_string_inputs() -> None:
    m = model([N("StringConcat", ["x", "x"], ["y"])], [vi("x", STR, [2])], [vi("y", STR, [2])])
    got = run(m, {"x": np.array(["ab", "c"])})[0]
    assert got.dtype == object and got.tolist() == ["abab", "cc"]


def test_strings_inside_a_loop_body() -> None:
    body = helper.make_graph([N("StringConcat", ["acc_in", "piece"], ["acc_out"]), N("Identity", ["c"], ["c_out"])],
                             "body", [vi("i", I64, []), vi("c", BOOL, []), vi("acc_in", STR, [1])],
                             [vi("c_out", BOOL, []), vi("acc_out", STR, [1])])
    m = model([N("Loop", ["trip", "", "start"], ["result"], body=body)], [vi("start", STR, [1])],
              [vi("result", STR, [1])], opset=20,
              inits={"trip": np.array(3, np.int64), "piece": strings("ab")})
    assert run(m, {"start": strings(">")})[0].tolist() == [">ababab"]


# ---- malformed input ----------------------------------------------------------------------------


def _concat() -> Any:
    return model([N("StringConcat", ["x", "y"], ["z"], name="join")], [vi("x", STR, [2]), vi("y", STR, [2])],
                 [vi("z", STR, [2])])


def test_an_object_array_of_non_strings_is_refused_naming_the_input() -> None:
    with pytest.raises(InputError, match=r"input 'x' is declared tensor\(string\), but element \[1\] is int 5"):
        run(_concat(), {"x": strings("a", 5), "y": strings("b", "c")})


def test_a_numeric_array_for_a_string_input_is_refused() -> None:
    with pytest.raises(InputError, match=r"input 'y' is declared tensor\(string\).*got a float32 array"):
        run(_concat(), {"x": strings("a", "b"), "y": np.zeros(2, np.float32)})


def test_string_operator_on_numeric_data_names_node_and_input() -> None:
    m = model([N("Cast", ["n"], ["f"], to=F32), N("StringConcat", ["f", "f"], ["z"], name="join")],
              [vi("n", I64, [2])], [vi("z", STR, [2])])
    with pytest.raises(RunError, match=r"node 'join' \(#1, StringConcat\): input 0 \(X\) 'f' must be a string "
                                       r"tensor, got float32"):
        run(m, {"n": np.array([1, 2], np.int64)})


def test_shapes_that_do_not_broadcast() -> None:
    with pytest.raises(RunError, match=r"'join'.*input shapes \[2\] and \[3\] do not broadcast"):
        run(model([N("StringConcat", ["x", "y"], ["z"], name="join")], [vi("x", STR, [2]), vi("y", STR, [3])],
                  [vi("z", STR, None)]), {"x": strings("a", "b"), "y": strings("a", "b", "c")})


def test_bad_regular_expression_names_node_and_attribute() -> None:
    m = model([N("RegexFullMatch", ["x"], ["y"], name="match", pattern="(ab")], [vi("x", STR, [1])],
              [vi("y", BOOL, [1])])
    with pytest.raises(ModelError, match=r"node 'match' \(#0, RegexFullMatch\): attribute 'pattern' = '\(ab' is not "
                                         r"a regular expression"):
        run(m, {"x": strings("ab")})


@pytest.mark.parametrize("locale,why", [("en US!", "is not a locale name"), ("tr_TR", "has case rules of its own"),
                                        ("az-AZ.UTF-8", "has case rules of its own")])
def test_locale_plugnn_cannot_honour_is_refused(locale: str, why: str) -> None:
    m = model([N("StringNormalizer", ["x"], ["y"], name="norm", case_change_action="LOWER", locale=locale)],
              [vi("x", STR, [1])], [vi("y", STR, None)], opset=17)
    with pytest.raises(ModelError, match=rf"node 'norm' \(#0, StringNormalizer\): attribute 'locale' .*{why}"):
        run(m, {"x": strings("I")})


def test_unknown_case_change_action_and_wrong_rank() -> None:
    m = model([N("StringNormalizer", ["x"], ["y"], name="norm", case_change_action="TITLE")],
              [vi("x", STR, [1])], [vi("y", STR, None)], opset=17)
    with pytest.raises(ModelError, match=r"'norm'.*attribute 'case_change_action' = 'TITLE' is not one of"):
        run(m, {"x": strings("a")})
    m = model([N("StringNormalizer", ["x"], ["y"], name="norm")], [vi("x", STR, [2, 2])], [vi("y", STR, None)],
              opset=17)
    with pytest.raises(RunError, match=r"'norm'.*has shape \[2, 2\]; StringNormalizer takes \[C\] or \[1, C\]"):
        run(m, {"x": strings("a", "b", "c", "d", shape=(2, 2))})


def test_negative_maxsplit_is_refused() -> None:
    m = model([N("StringSplit", ["x"], ["p", "n"], name="split", maxsplit=-1)], [vi("x", STR, [1])],
              [vi("p", STR, None), vi("n", I64, [1])])
    with pytest.raises(ModelError, match=r"'split'.*attribute 'maxsplit' = -1 must be >= 0"):
        run(m, {"x": strings("a b")})


def test_cast_of_text_that_is_not_a_number() -> None:
    m = model([N("Cast", ["s"], ["y"], to=I64, name="parse")], [vi("s", STR, [2])], [vi("y", I64, [2])])
    with pytest.raises(RunError, match=r"'parse'.*element \[1\] '1.5' of input 0 is not a number \(an integer\)"):
        run(m, {"s": strings("3", "1.5")})
    m8 = model([N("Cast", ["s"], ["y"], to=TensorProto.INT8, name="parse")], [vi("s", STR, [1])],
               [vi("y", TensorProto.INT8, [1])])
    with pytest.raises(RunError, match=r"element \[0\] '300' is out of the range of int8"):
        run(m8, {"s": strings("300")})


def test_equal_of_a_string_and_a_number_is_refused() -> None:
    m = model([N("Equal", ["s", "f"], ["y"], name="eq")], [vi("s", STR, [2]), vi("f", F32, [2])],
              [vi("y", BOOL, [2])])
    with pytest.raises(RunError, match=r"'eq'.*inputs are object and float32: Equal on a string tensor needs two"):
        run(m, {"s": strings("a", "b"), "f": np.zeros(2, np.float32)})


def test_other_operators_on_strings_are_refused_naming_the_node() -> None:
    m = model([N("Reshape", ["s", "shape"], ["y"], name="reshape")], [vi("s", STR, [2])], [vi("y", STR, None)],
              inits={"shape": np.array([2, 1], np.int64)})
    with pytest.raises(RunError, match=r"node 'reshape' \(#0, Reshape\): operator 'Reshape' does not take string "
                                       r"tensors"):
        run(m, {"s": strings("a", "b")})


def test_shape_and_size_of_a_string_tensor_feed_numeric_layers() -> None:
    nodes = [N("Shape", ["s"], ["dims"], start=-1), N("Size", ["s"], ["count"]),
             N("Cast", ["dims"], ["f"], to=F32), N("Mul", ["f", "x"], ["y"])]
    m = model(nodes, [vi("s", STR, [2, 3]), vi("x", F32, [1])], [vi("count", I64, []), vi("y", F32, [1])])
    feeds = {"s": strings(*"abcdef", shape=(2, 3)), "x": np.array([2.5], np.float32)}
    for g, w in zip(run(m, feeds), reference(m, feeds)):
        same(g, w)


def test_bfloat16_to_string_and_back() -> None:
    import ml_dtypes

    bf16 = TensorProto.BFLOAT16
    m = model([N("Cast", ["x"], ["s"], to=STR), N("Cast", ["s"], ["back"], to=bf16)],
              [vi("x", bf16, [3])], [vi("s", STR, [3]), vi("back", bf16, [3])])
    x = np.array([1.5, -0.125, 3.0], ml_dtypes.bfloat16)
    text, back = run(m, {"x": x})
    assert text.tolist() == ["1.5", "-0.125", "3.0"]
    assert back.dtype == x.dtype and back.tolist() == x.tolist()
