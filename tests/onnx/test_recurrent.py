"""ONNX RNN, GRU and LSTM import: every attribute, optional input and output, opsets 7 to the
newest, against onnxruntime on CpuRef; and the import errors, which name node, operator and
attribute."""

from __future__ import annotations

from typing import Any

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_model, run_ort, run_plugnn
import onnx
import onnx.utils
from onnx import TensorProto, defs, helper, numpy_helper

import plugnn
import plugnn.onnx
from plugnn.errors import ModelError

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
NEWEST = min(defs.onnx_opset_version(), 22)  # the newest onnxruntime runs here
OPSETS = sorted({7, 13, 14, NEWEST})


def recurrent_model(op: str, *, seq: int = 5, batch: int = 3, size: int = 4, hidden: int = 3,
                    direction: str = "forward", layout: int = 0, optional: tuple[str, ...] = (),
                    outputs: tuple[str, ...] | None = None, opset: int = 17, lens: Any = None,
                    lens_input: bool = False, seed: int = 0, **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """One node of `op` with weights as initializers; `optional` names the optional inputs given
    (B, sequence_lens, initial_h, initial_c, P), the others are empty names."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    rows = GATES[op] * hidden
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    inits = {"W": rng.standard_normal((dirs, rows, size)).astype(np.float32) * 0.5,
             "R": rng.standard_normal((dirs, rows, hidden)).astype(np.float32) * 0.5}
    values = {"B": rng.standard_normal((dirs, 2 * rows)).astype(np.float32) * 0.5,
              "initial_h": rng.standard_normal(state).astype(np.float32),
              "initial_c": rng.standard_normal(state).astype(np.float32),
              "P": rng.standard_normal((dirs, 3 * hidden)).astype(np.float32) * 0.5}
    names = ["B", "sequence_lens", "initial_h"] + (["initial_c", "P"] if op == "LSTM" else [])
    inputs = {"X": x_shape}
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    for name in optional:
        if name == "sequence_lens":
            lens_array = np.asarray(lens if lens is not None else rng.integers(1, seq + 1, batch))
            if lens_input:
                inputs[name] = ([batch], TensorProto.INT32)
                feeds[name] = lens_array.astype(np.int32)
            else:
                inits[name] = lens_array.astype(np.int32)
        else:
            inits[name] = values[name]
    node_inputs = ["X", "W", "R"] + [n if n in optional else "" for n in names]
    while node_inputs[-1] == "":
        node_inputs.pop()
    all_outputs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    used = outputs or tuple(all_outputs)
    node_outputs = [o if o in used else "" for o in all_outputs]
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(op, node_inputs, node_outputs, name=f"{op.lower()}_node", hidden_size=hidden,
                            direction=direction, **attrs)
    model = make_model([node], inputs, list(used), inits, opset=opset)
    return model, feeds


def batch_major_twin(model: Any, feeds: dict[str, np.ndarray]) -> tuple[Any, dict[str, np.ndarray]]:
    """The layout=1 model of a layout=0 one (onnxruntime runs layout 0 only): X, initial_h and
    initial_c transposed to batch first."""
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    twin.graph.node[0].attribute.append(helper.make_attribute("layout", 1))
    x = twin.graph.input[0].type.tensor_type.shape.dim
    x[0].dim_value, x[1].dim_value = x[1].dim_value, x[0].dim_value
    for tensor in twin.graph.initializer:
        if tensor.name in ("initial_h", "initial_c"):
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).transpose(1, 0, 2), tensor.name))
    return twin, {**feeds, "X": feeds["X"].transpose(1, 0, 2).copy()}


def compare(model: Any, feeds: dict[str, np.ndarray], runtime: Any, tolerance: float = 2e-5,
            batch_major: bool = False) -> None:
    """plugnn against onnxruntime; with batch_major, plugnn runs the model's layout=1 twin and its
    outputs are compared transposed back."""
    expected = run_ort(model, feeds)
    if batch_major:
        model, feeds = batch_major_twin(model, feeds)
    got = run_plugnn(runtime, model, feeds)
    if batch_major:
        got = {k: v.transpose(1, 2, 0, 3) if v.ndim == 4 else v.transpose(1, 0, 2) for k, v in got.items()}
    assert set(got) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=tolerance, atol=tolerance, err_msg=name)


# ---- against onnxruntime ----------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("opset", OPSETS)
def test_every_direction_and_opset(runtime, op: str, direction: str, opset: int) -> None:
    optional = ("B", "initial_h") + (("initial_c",) if op == "LSTM" else ())
    compare(*recurrent_model(op, direction=direction, optional=optional, opset=opset), runtime)


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_optional_inputs_each_left_out(runtime, op: str, layout: int) -> None:
    names = ("B", "sequence_lens", "initial_h") + (("initial_c", "P") if op == "LSTM" else ())
    for leave_out in (None, *names):
        optional = tuple(n for n in names if n != leave_out)
        model, feeds = recurrent_model(op, direction="bidirectional", optional=optional, lens=[5, 2, 4], opset=14)
        compare(model, feeds, runtime, batch_major=bool(layout))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_outputs_any_may_be_unused(runtime, op: str) -> None:
    outputs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    for used in [(o,) for o in outputs] + [tuple(outputs)]:
        compare(*recurrent_model(op, direction="bidirectional", optional=("B",), outputs=used), runtime)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_lens_as_a_graph_input(runtime, op: str) -> None:
    model, feeds = recurrent_model(op, direction="bidirectional", optional=("B", "sequence_lens"), lens=[5, 1, 3],
                                   lens_input=True, opset=14)
    compare(model, feeds, runtime)
    feeds["sequence_lens"] = np.array([0, 5, 2], np.int32)  # onnxruntime gives 0 for a length 0 too
    compare(model, feeds, runtime, batch_major=True)


def test_sequence_lens_constant_int64_is_cast(runtime) -> None:
    """ONNX types sequence_lens int32; an int64 constant (some exporters) is converted."""
    model, feeds = recurrent_model("GRU", optional=("B",))
    expected_model, _ = recurrent_model("GRU", optional=("B", "sequence_lens"), lens=[2, 5, 4])
    node = model.graph.node[0]
    node.input.extend(["lens64"])
    model.graph.initializer.append(numpy_helper.from_array(np.array([2, 5, 4], np.int64), "lens64"))
    got = run_plugnn(runtime, model, feeds)
    expected = run_ort(expected_model, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(runtime, linear_before_reset: int) -> None:
    compare(*recurrent_model("GRU", direction="bidirectional", optional=("B", "initial_h"),
                             linear_before_reset=linear_before_reset), runtime)


@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_input_forget_and_peepholes(runtime, input_forget: int) -> None:
    compare(*recurrent_model("LSTM", direction="bidirectional", optional=("B", "initial_h", "initial_c", "P"),
                             input_forget=input_forget), runtime)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(runtime, op: str) -> None:
    compare(*recurrent_model(op, direction="bidirectional", optional=("B", "initial_h"), clip=0.3), runtime)


def test_hidden_size_from_r(runtime) -> None:
    model, feeds = recurrent_model("LSTM", optional=("B",))
    del model.graph.node[0].attribute[[a.name for a in model.graph.node[0].attribute].index("hidden_size")]
    expected = run_ort(recurrent_model("LSTM", optional=("B",))[0], feeds)
    got = run_plugnn(runtime, model, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5)


# The activations, with every alpha/beta given (onnxruntime's defaults for Affine and
# ThresholdedRelu are 0 where ONNX's operators say 1; plugnn takes ONNX's, checked below).
ACTIVATION_CASES = {
    "RNN": [(["Relu"], [], []), (["Affine"], [0.6], [0.1]), (["LeakyRelu"], [0.2], []),
            (["ThresholdedRelu"], [0.1], []), (["ScaledTanh"], [1.2], [0.7]), (["HardSigmoid"], [0.3], [0.4]),
            (["Elu"], [0.8], []), (["Softsign"], [], []), (["Softplus"], [], []), (["Sigmoid"], [], []),
            (["LeakyRelu", "HardSigmoid"], [0.2, 0.3], [0.6])],
    "GRU": [(["HardSigmoid", "Softsign"], [0.3], [0.45]), (["Sigmoid", "Elu"], [], []),
            (["Sigmoid", "ScaledTanh", "HardSigmoid", "LeakyRelu"], [1.1, 0.25, 0.05], [0.9, 0.5])],
    "LSTM": [(["HardSigmoid", "Softplus", "Softsign"], [], []), (["Sigmoid", "Tanh", "Relu"], [], []),
             (["Sigmoid", "Affine", "ScaledTanh"], [0.9, 1.5], [0.1, 0.5])],
}


@pytest.mark.parametrize("op,case", [(op, i) for op, cases in ACTIVATION_CASES.items() for i in range(len(cases))])
def test_activations(runtime, op: str, case: int) -> None:
    names, alphas, betas = ACTIVATION_CASES[op][case]
    per_direction = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    direction = "bidirectional" if len(names) == 2 * per_direction else "forward"
    attrs: dict[str, Any] = {"activations": names}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    compare(*recurrent_model(op, direction=direction, optional=("B",), **attrs), runtime)


def test_activation_defaults_are_onnx_operators(runtime) -> None:
    """No alpha/beta given: LeakyRelu 0.01, HardSigmoid 0.2/0.5, Elu 1 (as onnxruntime), and
    Affine 1/0, ThresholdedRelu 1 (ONNX's operators; onnxruntime uses 0)."""
    for names, same_as in ((["LeakyRelu"], {}), (["HardSigmoid"], {}), (["Elu"], {}),
                           (["Affine"], {"activation_alpha": [1.0], "activation_beta": [0.0]}),
                           (["ThresholdedRelu"], {"activation_alpha": [1.0]})):
        model, feeds = recurrent_model("RNN", optional=("B",), activations=names)
        reference, _ = recurrent_model("RNN", optional=("B",), activations=names, **same_as)
        got = run_plugnn(runtime, model, feeds)
        expected = run_ort(reference, feeds)
        for name in expected:
            np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5, err_msg=str(names))


def test_per_direction_activations_serve_both_directions(runtime) -> None:
    model, feeds = recurrent_model("GRU", direction="bidirectional", optional=("B",),
                                   activations=["HardSigmoid", "Softsign"], activation_alpha=[0.3],
                                   activation_beta=[0.45])
    reference, _ = recurrent_model("GRU", direction="bidirectional", optional=("B",),
                                   activations=["HardSigmoid", "Softsign"] * 2, activation_alpha=[0.3, 0.3],
                                   activation_beta=[0.45, 0.45])
    got = run_plugnn(runtime, model, feeds)
    expected = run_ort(reference, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5)


def test_hidden_size_one_and_single_step(runtime) -> None:
    for op in ("RNN", "GRU", "LSTM"):
        compare(*recurrent_model(op, seq=1, batch=1, size=1, hidden=1, direction="bidirectional",
                                 optional=("B",)), runtime)


# ---- errors ------------------------------------------------------------------------------------


def import_error(model: Any) -> str:
    with pytest.raises(ModelError) as info:
        plugnn.onnx.load(model)
    return str(info.value)


ERRORS = {
    "direction": (dict(direction="sideways"), r"attribute 'direction' = 'sideways' is not supported"),
    "layout value": (dict(layout=2, opset=14), r"attribute 'layout' = 2 is not supported"),
    "layout before 14": (dict(layout=1, opset=13), r"attribute 'layout' exists from opset 14"),
    "unknown activation": (dict(activations=["Gelu"]), r"attribute 'activations' = 'Gelu' is not supported"),
    "activation count": (dict(activations=["Tanh", "Tanh", "Tanh"]), r"attribute 'activations' .* 1 function"),
    "alphas left over": (dict(activations=["Relu"], activation_alpha=[0.5]),
                         r"attribute 'activation_alpha' has 1 values, but the activations \['Relu'\] take 0"),
    "betas left over": (dict(activations=["LeakyRelu"], activation_beta=[0.5]),
                        r"attribute 'activation_beta' has 1 values"),
    "scaled tanh without parameters": (dict(activations=["ScaledTanh"]),
                                       r"attribute 'activation_alpha' has no value left for activation 'ScaledTanh'"),
    "clip 0": (dict(clip=0.0), r"attribute 'clip' = 0.0 is not supported; supported: a threshold > 0"),
    "negative clip": (dict(clip=-1.0), r"attribute 'clip' = -1.0 is not supported"),
    "hidden_size 0": (dict(hidden_size=0), r"attribute 'hidden_size' = 0 is not supported"),
    "hidden_size wrong": (dict(hidden_size=4), r"w must have shape"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_node_operator_and_attribute(name: str) -> None:
    attrs, pattern = ERRORS[name]
    attrs = dict(attrs)
    hidden = attrs.pop("hidden_size", 3)
    model, _ = recurrent_model("RNN", **attrs)
    if hidden != 3:
        node = model.graph.node[0]
        node.attribute[[a.name for a in node.attribute].index("hidden_size")].i = hidden
    message = import_error(model)
    assert "node 'rnn_node'" in message and "RNN" in message, message
    assert re.search(pattern, message), message


@pytest.mark.parametrize("op,attr", [("GRU", "linear_before_reset"), ("LSTM", "input_forget")])
def test_cell_flags_must_be_0_or_1(op: str, attr: str) -> None:
    model, _ = recurrent_model(op, **{attr: 2})
    message = import_error(model)
    assert f"attribute {attr!r} = 2 is not supported; supported: 0, 1" in message and op in message


@pytest.mark.parametrize("op,attr", [("RNN", "linear_before_reset"), ("RNN", "input_forget"),
                                     ("GRU", "input_forget"), ("LSTM", "linear_before_reset")])
def test_another_cells_attribute_is_refused(op: str, attr: str) -> None:
    model, _ = recurrent_model(op, **{attr: 1})
    assert f"attribute {attr!r} is not supported by plugnn's {op} import" in import_error(model)


def test_too_many_inputs_are_refused() -> None:
    model, _ = recurrent_model("GRU", optional=("B", "initial_h"))
    model.graph.node[0].input.extend(["W"])
    assert "GRU takes at most 6 inputs, got 7" in import_error(model)


def test_sequence_lens_of_another_type_at_run_time_is_refused() -> None:
    model, _ = recurrent_model("RNN", optional=("sequence_lens",), lens_input=True, lens=[1, 2, 3])
    model.graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    assert "input 4 (sequence_lens) is int64; ONNX and plugnn take int32" in import_error(model)


def test_sequence_lens_constant_negative_is_refused() -> None:
    model, _ = recurrent_model("RNN", optional=("sequence_lens",), lens=[1, 2, 3])
    lens = next(t for t in model.graph.initializer if t.name == "sequence_lens")
    lens.CopyFrom(numpy_helper.from_array(np.array([1, -2, 3], np.int64), "sequence_lens"))
    assert "input 4 (sequence_lens) = [1, -2, 3]: lengths are >= 0 and fit int32" in import_error(model)


def test_sequence_lens_past_the_sequence_fail_at_run_time(runtime) -> None:
    model, feeds = recurrent_model("LSTM", optional=("sequence_lens",), lens_input=True, lens=[1, 2, 3])
    feeds["sequence_lens"] = np.array([1, 6, 3], np.int32)
    with pytest.raises(plugnn.PlugnnError, match=r"sequence_lens\[1\] = 6 is outside \[0, 5\]"):
        run_plugnn(runtime, model, feeds)


# ---- the zoo's recurrent models ---------------------------------------------------------------

# model -> (inputs, outputs) of the part plugnn imports on its own, or None: the whole model.
# gru_seq_first picks its last step with a Gather of run-time data and lstm_text embeds its
# tokens with one, which the gather family imports; up to there (from there) the recurrent
# layers run here.
ZOO = {
    "lstm_bidir": None,
    "rnn_tanh": None,
    "gru_seq_first": (["features"], ["/rnn/Squeeze_1_output_0", "/rnn/GRU_1_output_1"]),
    "lstm_text": (["/embedding/Gather_output_0"], ["/lstm/LSTM_output_0", "/lstm/LSTM_output_1",
                                                   "/lstm/LSTM_output_2"]),
}


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name", ZOO)
def test_zoo_recurrent_models_match_onnxruntime(runtime, name: str, batch: int) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from zoo import weights

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == name)
    model = weights.materialize(weights.model_path(entry), seed=0)
    feeds = weights.make_inputs(entry, "ci", batch, seed=0)
    shapes = weights.input_shapes(entry, "ci", batch)
    if ZOO[name] is not None:
        inputs, outputs = ZOO[name]
        inferred = onnx.shape_inference.infer_shapes(model)
        model = onnx.utils.Extractor(inferred).extract_model(inputs, outputs)
        if inputs != [i.name for i in inferred.graph.input]:  # an inner tensor: the embedding's [batch, seq, dim]
            seq = shapes["input_ids"][1]
            feeds = {inputs[0]: np.random.default_rng(0).standard_normal((batch, seq, 64)).astype(np.float32)}
            shapes = {inputs[0]: feeds[inputs[0]].shape}
    expected = run_ort(model, feeds)
    got = run_plugnn(runtime, model, feeds, input_shapes=shapes)
    for out, value in expected.items():
        assert weights.relative_difference(got[out], value) <= entry["tolerance"]["CpuRef"], out
