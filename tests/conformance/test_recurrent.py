"""RECURRENT (ONNX RNN, GRU, LSTM) against a NumPy float64 implementation of ONNX's equations.

The grid: every cell x direction x subset of the optional inputs, in both layouts; GRU's
linear_before_reset, LSTM's input_forget and peepholes, clip, every recurrent activation with its
alpha/beta, ragged sequence_lens (0 and the full length included), hidden size 1, empty dims and
every float type. Then every malformed layer refused at is_layer_supported with a reason, and
sequence_lens values outside [0, seq] failing execute with one.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest

from plugnn import BackendError
from plugnn.descriptors import ActivationDescriptor, ActivationKind, LayerKind, RecurrentCell, RecurrentDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, run_layer

# ---- the oracle ------------------------------------------------------------------------------

_FUNCTIONS = {
    ActivationKind.RELU: lambda x, a, b: np.maximum(x, 0.0),
    ActivationKind.TANH: lambda x, a, b: np.tanh(x),
    ActivationKind.SIGMOID: lambda x, a, b: 1.0 / (1.0 + np.exp(-x)),
    ActivationKind.LINEAR: lambda x, a, b: a * x + b,
    ActivationKind.LEAKY_RELU: lambda x, a, b: np.where(x >= 0, x, a * x),
    ActivationKind.THRESHOLDED_RELU: lambda x, a, b: np.where(x > a, x, 0.0),
    ActivationKind.SCALED_TANH: lambda x, a, b: a * np.tanh(b * x),
    ActivationKind.HARD_SIGMOID: lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    ActivationKind.ELU: lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0))),
    ActivationKind.SOFTSIGN: lambda x, a, b: x / (1.0 + np.abs(x)),
    ActivationKind.SOFTPLUS: lambda x, a, b: np.logaddexp(0.0, x),
}

GATES = {RecurrentCell.RNN: 1, RecurrentCell.GRU: 3, RecurrentCell.LSTM: 4}
FUNCTIONS = {RecurrentCell.RNN: 1, RecurrentCell.GRU: 2, RecurrentCell.LSTM: 3}
OPTIONAL = ("b", "sequence_lens", "initial_h", "initial_c", "p")


def _apply(act: ActivationDescriptor, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return _FUNCTIONS[act.kind](x, f32(act.alpha), f32(act.beta))


def _present(desc: RecurrentDescriptor) -> list[str]:
    flags = (desc.has_bias, desc.has_sequence_lens, desc.has_initial_h, desc.has_initial_c, desc.has_peepholes)
    return [name for name, on in zip(OPTIONAL, flags) if on]


def recurrent_reference(desc: RecurrentDescriptor, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """y, y_h (and y_c) by ONNX's equations, in float64, one sequence at a time."""
    x, w, r = (np.asarray(a, np.float64) for a in arrays[:3])
    given = dict(zip(_present(desc), arrays[3:]))
    if desc.batch_major:
        x = x.transpose(1, 0, 2)
    seq, batch, _ = x.shape
    n = desc.hidden_size
    dirs, gates, k = w.shape[0], GATES[desc.cell], FUNCTIONS[desc.cell]

    def state(name: str) -> np.ndarray:
        if name not in given:
            return np.zeros((dirs, batch, n))
        value = np.asarray(given[name], np.float64)
        return value.transpose(1, 0, 2) if desc.batch_major else value

    h0, c0 = state("initial_h"), state("initial_c")
    bias = np.asarray(given.get("b", np.zeros((dirs, 2 * gates * n))), np.float64)
    peep = np.asarray(given.get("p", np.zeros((dirs, 3 * n))), np.float64)
    lens = np.asarray(given.get("sequence_lens", np.full(batch, seq)), np.int64)

    def clip(v: np.ndarray) -> np.ndarray:
        bound = f32(desc.clip)
        return np.clip(v, -bound, bound) if bound > 0 else v

    y = np.zeros((seq, dirs, batch, n))
    y_h, y_c = np.zeros((dirs, batch, n)), np.zeros((dirs, batch, n))
    for d in range(dirs):
        f, g, hf = (list(desc.activations[d * k:(d + 1) * k]) + [None, None])[:3]
        wb, rb = np.split(bias[d], 2)
        reverse = desc.direction.name == "REVERSE" or d == 1
        for b in range(batch):
            h, c = h0[d, b].copy(), c0[d, b].copy()
            steps = range(lens[b] - 1, -1, -1) if reverse else range(lens[b])
            for t in steps:
                xw = w[d] @ x[t, b] + wb  # every gate's x W^T + Wb
                hr = r[d] @ h + rb        # every gate's h R^T + Rb
                if desc.cell is RecurrentCell.RNN:
                    h = _apply(f, clip(xw + hr))
                elif desc.cell is RecurrentCell.GRU:
                    z = _apply(f, clip(xw[:n] + hr[:n]))
                    rg = _apply(f, clip(xw[n:2 * n] + hr[n:2 * n]))
                    if desc.linear_before_reset:
                        cand = _apply(g, clip(xw[2 * n:] + rg * hr[2 * n:]))
                    else:
                        cand = _apply(g, clip(xw[2 * n:] + r[d][2 * n:] @ (rg * h) + rb[2 * n:]))
                    h = (1 - z) * cand + z * h
                else:
                    gi, go, gf, gc = np.split(xw + hr, 4)
                    pi, po, pf = np.split(peep[d], 3)
                    i = _apply(f, clip(gi + pi * c))
                    fg = 1 - i if desc.input_forget else _apply(f, clip(gf + pf * c))
                    c = fg * c + i * _apply(g, clip(gc))
                    o = _apply(f, clip(go + po * c))
                    h = o * _apply(hf, c)
                y[t, d, b] = h
            if lens[b] > 0:
                y_h[d, b], y_c[d, b] = h, c
    if desc.batch_major:
        y, y_h, y_c = y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)
    return [y, y_h] + ([y_c] if desc.cell is RecurrentCell.LSTM else [])


# ---- building layers ---------------------------------------------------------------------------

DEFAULT_ACTS = {
    RecurrentCell.RNN: (ActivationDescriptor("tanh"),),
    RecurrentCell.GRU: (ActivationDescriptor("sigmoid"), ActivationDescriptor("tanh")),
    RecurrentCell.LSTM: (ActivationDescriptor("sigmoid"), ActivationDescriptor("tanh"), ActivationDescriptor("tanh")),
}


def make_desc(cell: str | RecurrentCell, hidden: int = 3, direction: str = "forward",
              optional: Sequence[str] = (), acts: Sequence[ActivationDescriptor] | None = None,
              **options: object) -> RecurrentDescriptor:
    cell = RecurrentCell[cell.upper()] if isinstance(cell, str) else cell
    dirs = 2 if direction == "bidirectional" else 1
    acts = tuple(acts) if acts is not None else DEFAULT_ACTS[cell] * dirs
    return RecurrentDescriptor(cell, hidden, direction, acts, has_bias="b" in optional,
                               has_sequence_lens="sequence_lens" in optional, has_initial_h="initial_h" in optional,
                               has_initial_c="initial_c" in optional, has_peepholes="p" in optional, **options)


def shapes_of(desc: RecurrentDescriptor, seq: int, batch: int, size: int
              ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The input and output shapes backend_api.h gives."""
    n, gates = desc.hidden_size, GATES[desc.cell]
    dirs = 2 if desc.direction.name == "BIDIRECTIONAL" else 1
    state = (batch, dirs, n) if desc.batch_major else (dirs, batch, n)
    optional = {"b": (dirs, 2 * gates * n), "sequence_lens": (batch,), "initial_h": state, "initial_c": state,
                "p": (dirs, 3 * n)}
    x = (batch, seq, size) if desc.batch_major else (seq, batch, size)
    inputs = [x, (dirs, gates * n, size), (dirs, gates * n, n)] + [optional[o] for o in _present(desc)]
    y = (batch, seq, dirs, n) if desc.batch_major else (seq, dirs, batch, n)
    outputs = [y, state] + ([state] if desc.cell is RecurrentCell.LSTM else [])
    return inputs, outputs


def make_spec(desc: RecurrentDescriptor, inputs: Sequence[tuple[int, ...]], outputs: Sequence[tuple[int, ...]],
              dtype: DataType = DataType.FLOAT32, dtypes: Sequence[DataType] | None = None,
              output_dtypes: Sequence[DataType] | None = None, name: str = "recurrent") -> LayerSpec:
    lens = 3 + int(desc.has_bias) if desc.has_sequence_lens else -1
    dtypes = dtypes or [DataType.INT32 if i == lens else dtype for i in range(len(inputs))]
    output_dtypes = output_dtypes or [dtype] * len(outputs)
    return LayerSpec(LayerKind.RECURRENT, name, desc,
                     tuple(TensorInfo(tuple(s), t) for s, t in zip(inputs, dtypes)),
                     tuple(TensorInfo(tuple(s), t) for s, t in zip(outputs, output_dtypes)))


def random_inputs(desc: RecurrentDescriptor, shapes: Sequence[tuple[int, ...]], seed: int,
                  lens: Sequence[int] | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for i, shape in enumerate(shapes):
        if i >= 3 and _present(desc)[i - 3] == "sequence_lens":
            seq = shapes[0][1] if desc.batch_major else shapes[0][0]
            arrays.append(np.asarray(lens if lens is not None else rng.integers(0, seq + 1, shape), np.int32))
        else:
            scale = 1.5 if i == 0 else 0.6
            arrays.append((rng.standard_normal(shape) * scale).astype(np.float32))
    return arrays


def check(backend, desc: RecurrentDescriptor, seq: int = 4, batch: int = 3, size: int = 2, seed: int = 0,
          lens: Sequence[int] | None = None, dtype: DataType = DataType.FLOAT32,
          rtol: float = RTOL, atol: float = ATOL) -> None:
    inputs, outputs = shapes_of(desc, seq, batch, size)
    spec = make_spec(desc, inputs, outputs, dtype)
    arrays = random_inputs(desc, inputs, seed, lens)
    if dtype is not DataType.FLOAT32:  # the oracle sees the values the backend sees
        arrays = [a if a.dtype == np.int32 else a.astype(dtype.numpy_dtype).astype(np.float64) for a in arrays]
    got = run_layer(backend, spec, arrays)
    for i, (actual, expected) in enumerate(zip(got, recurrent_reference(desc, arrays))):
        assert_close(actual, expected, rtol, atol, f"{spec.name} {desc} output {i}")


# ---- conformance --------------------------------------------------------------------------------


def _subsets(cell: str) -> list[tuple[str, ...]]:
    names = OPTIONAL if cell == "lstm" else OPTIONAL[:3]
    return [combo for n in range(len(names) + 1) for combo in itertools.combinations(names, n)]


GRID = [(cell, direction, optional) for cell in ("rnn", "gru", "lstm")
        for direction in ("forward", "reverse", "bidirectional") for optional in _subsets(cell)]


@pytest.mark.parametrize("batch_major", [False, True], ids=["seq_major", "batch_major"])
@pytest.mark.parametrize("cell,direction,optional", GRID,
                         ids=["-".join((c, d, "+".join(o) or "none")) for c, d, o in GRID])
def test_cell_direction_and_optional_inputs(backend, cell: str, direction: str, optional: tuple[str, ...],
                                            batch_major: bool) -> None:
    desc = make_desc(cell, 3, direction, optional, batch_major=batch_major)
    check(backend, desc, lens=[4, 1, 3] if "sequence_lens" in optional else None,
          seed=len(optional) + 7 * len(direction))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("lens", [[0, 4, 2, 1, 3], [0, 0, 0, 0, 0], [4, 4, 4, 4, 4]], ids=["ragged", "zeros", "full"])
def test_sequence_lens(backend, cell: str, direction: str, lens: list[int]) -> None:
    """y past each length is 0; y_h (y_c) is the state after the last valid step; a length 0
    gives 0 everywhere, also with an initial state."""
    optional = ("b", "sequence_lens", "initial_h") + (("initial_c",) if cell == "lstm" else ())
    check(backend, make_desc(cell, 2, direction, optional), seq=4, batch=5, lens=lens)


@pytest.mark.parametrize("linear_before_reset", [False, True])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_linear_before_reset(backend, linear_before_reset: bool, direction: str) -> None:
    desc = make_desc("gru", 4, direction, ("b", "initial_h"), linear_before_reset=linear_before_reset)
    check(backend, desc, seq=5, size=3)


@pytest.mark.parametrize("peepholes", [False, True])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_input_forget(backend, peepholes: bool, direction: str) -> None:
    optional = ("b", "initial_h", "initial_c") + (("p",) if peepholes else ())
    check(backend, make_desc("lstm", 3, direction, optional, input_forget=True), seq=5)


@pytest.mark.parametrize("clip", [0.05, 0.5, 3.0, math.inf])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_clip(backend, cell: str, clip: float) -> None:
    """clip bounds every gate's argument (the peephole terms included), not the c of h(c): an
    initial c of 5 would show a clipped one."""
    optional = ("b", "initial_h") + (("initial_c", "p") if cell == "lstm" else ())
    desc = make_desc(cell, 3, "bidirectional", optional, clip=clip,
                     linear_before_reset=cell == "gru")
    inputs, outputs = shapes_of(desc, 4, 2, 3)
    arrays = random_inputs(desc, inputs, 5)
    arrays[0] *= 3
    if cell == "lstm":
        arrays[-2] = np.full_like(arrays[-2], 5.0)
    spec = make_spec(desc, inputs, outputs)
    got = run_layer(backend, spec, arrays)
    for actual, expected in zip(got, recurrent_reference(desc, arrays)):
        assert_close(actual, expected, RTOL, ATOL, f"{desc}")


ACTIVATIONS = {
    "relu": ActivationDescriptor("relu"),
    "tanh": ActivationDescriptor("tanh"),
    "sigmoid": ActivationDescriptor("sigmoid"),
    "affine": ActivationDescriptor("linear", 0.7, -0.2),
    "leaky_relu": ActivationDescriptor("leaky_relu", 0.1),
    "thresholded_relu": ActivationDescriptor("thresholded_relu", 0.3),
    "scaled_tanh": ActivationDescriptor("scaled_tanh", 1.3, 0.6),
    "hard_sigmoid": ActivationDescriptor("hard_sigmoid", 0.25, 0.4),
    "elu": ActivationDescriptor("elu", 0.9),
    "softsign": ActivationDescriptor("softsign"),
    "softplus": ActivationDescriptor("softplus"),
}


def test_every_recurrent_activation_is_covered() -> None:
    assert {a.kind for a in ACTIVATIONS.values()} == set(_FUNCTIONS)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(backend, cell: str, name: str) -> None:
    """The function under test in every position of both directions, the others the defaults
    (so each position shows it runs the right function with the right alpha and beta)."""
    k = FUNCTIONS[RecurrentCell[cell.upper()]]
    for position in range(k):
        acts = list(DEFAULT_ACTS[RecurrentCell[cell.upper()]])
        acts[position] = ACTIVATIONS[name]
        reverse = list(DEFAULT_ACTS[RecurrentCell[cell.upper()]])
        reverse[(position + 1) % k] = ACTIVATIONS[name]
        desc = make_desc(cell, 3, "bidirectional", ("b",), acts=acts + reverse)
        check(backend, desc, seq=3, batch=2, seed=position)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("seq,batch,size,hidden", [(1, 1, 1, 1), (6, 2, 5, 1), (0, 2, 3, 2), (3, 0, 3, 2),
                                                   (3, 2, 0, 2)],
                         ids=["all_one", "hidden_1", "seq_0", "batch_0", "input_0"])
def test_sizes(backend, cell: str, seq: int, batch: int, size: int, hidden: int) -> None:
    """Hidden size 1 and empty dims: no steps gives y empty and y_h (y_c) 0 (a length-0
    sequence); no batch gives empty outputs; no input features leaves h R^T + b."""
    optional = ("b", "initial_h") + (("initial_c",) if cell == "lstm" else ())
    for batch_major in (False, True):
        check(backend, make_desc(cell, hidden, "bidirectional", optional, batch_major=batch_major),
              seq=seq, batch=batch, size=size)


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64],
                         ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_float_types(backend, cell: str, dtype: DataType) -> None:
    """Computed in double, rounded once to the output type."""
    optional = ("b", "sequence_lens", "initial_h") + (("initial_c", "p") if cell == "lstm" else ())
    tolerance = {DataType.FLOAT16: 2e-3, DataType.BFLOAT16: 1e-2, DataType.FLOAT64: 1e-12}[dtype]
    check(backend, make_desc(cell, 3, "bidirectional", optional, batch_major=True), lens=[2, 4, 0], dtype=dtype,
          rtol=tolerance, atol=tolerance)


def test_nan_and_inf_propagate(backend) -> None:
    desc = make_desc("lstm", 2, "forward", ("b",))
    inputs, outputs = shapes_of(desc, 3, 2, 2)
    arrays = random_inputs(desc, inputs, 3)
    arrays[0][1, 0, 0] = np.nan
    arrays[0][0, 1, 1] = np.inf
    got = run_layer(backend, make_spec(desc, inputs, outputs), arrays)
    for actual, expected in zip(got, recurrent_reference(desc, arrays)):
        assert_close(actual, expected, RTOL, ATOL, "NaN and inf inputs")
    assert np.isnan(got[0][1:, 0, 0]).all()


@pytest.mark.parametrize("value", [-1, 5, 2**31 - 1, -2**31])
def test_sequence_lens_outside_the_sequence_fail_execute(backend, value: int) -> None:
    desc = make_desc("gru", 2, "forward", ("sequence_lens",))
    inputs, outputs = shapes_of(desc, 4, 2, 2)
    spec = make_spec(desc, inputs, outputs)
    arrays = random_inputs(desc, inputs, 0, lens=[1, value])
    if not backend.is_layer_supported(spec).supported:
        pytest.skip(f"{backend.backend_id}: {backend.is_layer_supported(spec).reason}")
    with pytest.raises(BackendError, match=rf"sequence_lens\[1\] = {value} is outside \[0, 4\]"):
        run_layer(backend, spec, arrays)


# ---- malformed layers ---------------------------------------------------------------------------


def _broken(desc: RecurrentDescriptor, **fields: object) -> RecurrentDescriptor:
    """`desc` with fields the descriptor's own checks would refuse (as a foreign caller may send)."""
    copy = dataclasses.replace(desc)
    for key, value in fields.items():
        object.__setattr__(copy, key, value)
    return copy


def _spec_for(desc: RecurrentDescriptor, reference: RecurrentDescriptor | None = None, **kwargs: object) -> LayerSpec:
    inputs, outputs = shapes_of(reference or desc, 4, 2, 3)
    return make_spec(desc, inputs, outputs, **kwargs)


LSTM = make_desc("lstm", 3, "forward", ("b", "sequence_lens", "initial_h", "initial_c", "p"))
GRU = make_desc("gru", 3, "bidirectional", ("b", "initial_h"))
RNN = make_desc("rnn", 3, "forward", ())
GELU = ActivationDescriptor("gelu")


def _edit(desc: RecurrentDescriptor, side: str, index: int, shape: tuple[int, ...] | None = None,
          dtype: DataType | None = None, drop: bool = False) -> LayerSpec:
    """The well-formed layer of `desc` with its input or output (`side`) `index` dropped or
    given another shape or type."""
    spec = _spec_for(desc)
    infos = list(getattr(spec, side))
    if drop:
        del infos[index]
    else:
        old = infos[index]
        infos[index] = TensorInfo(shape if shape is not None else old.shape, dtype or old.dtype)
    return dataclasses.replace(spec, **{side: tuple(infos)})


def _edit_inputs(desc: RecurrentDescriptor, index: int, *args: object, **kwargs: object) -> LayerSpec:
    return _edit(desc, "inputs", index, *args, **kwargs)  # type: ignore[arg-type]


def _edit_outputs(desc: RecurrentDescriptor, index: int, *args: object, **kwargs: object) -> LayerSpec:
    return _edit(desc, "outputs", index, *args, **kwargs)  # type: ignore[arg-type]


MALFORMED = {
    # descriptor values
    "unknown cell": (lambda: _spec_for(_broken(RNN, cell=7), RNN), r"unknown cell 7"),
    "invalid cell": (lambda: _spec_for(_broken(RNN, cell=0), RNN), r"unknown cell 0"),
    "unknown direction": (lambda: _spec_for(_broken(RNN, direction=4), RNN), r"unknown direction 4"),
    "hidden 0": (lambda: _spec_for(_broken(RNN, hidden_size=0), RNN), r"hidden_size must be >= 1"),
    "negative clip": (lambda: _spec_for(_broken(RNN, clip=-1.0), RNN), r"clip must be >= 0"),
    "NaN clip": (lambda: _spec_for(_broken(RNN, clip=math.nan), RNN), r"clip must be >= 0"),
    "batch_major 2": (lambda: _spec_for(_broken(RNN, batch_major=2), RNN), r"batch_major must be 0 or 1"),
    "linear_before_reset 2": (lambda: _spec_for(_broken(GRU, linear_before_reset=2), GRU),
                              r"linear_before_reset must be 0 or 1"),
    "input_forget 2": (lambda: _spec_for(_broken(LSTM, input_forget=2), LSTM), r"input_forget must be 0 or 1"),
    # cell / option combinations
    "initial_c for a GRU": (lambda: _spec_for(_broken(GRU, has_initial_c=True), GRU), r"initial_c is LSTM's"),
    "peepholes for an RNN": (lambda: _spec_for(_broken(RNN, has_peepholes=True), RNN), r"peepholes are LSTM's"),
    "input_forget for a GRU": (lambda: _spec_for(_broken(GRU, input_forget=True), GRU), r"input_forget is LSTM's"),
    "linear_before_reset for an LSTM": (lambda: _spec_for(_broken(LSTM, linear_before_reset=True), LSTM),
                                        r"linear_before_reset is GRU's"),
    "linear_before_reset for an RNN": (lambda: _spec_for(_broken(RNN, linear_before_reset=True), RNN),
                                       r"linear_before_reset is GRU's"),
    # activations
    "too few activations": (lambda: _spec_for(_broken(GRU, activations=DEFAULT_ACTS[RecurrentCell.GRU]), GRU),
                            r"takes 4 activations \(2 per direction\), got 2"),
    "too many activations": (lambda: _spec_for(_broken(RNN, activations=DEFAULT_ACTS[RecurrentCell.RNN] * 2), RNN),
                             r"takes 1 activations .* got 2"),
    "no activations": (lambda: _spec_for(_broken(LSTM, activations=()), LSTM), r"takes 3 activations"),
    "gelu activation": (lambda: _spec_for(_broken(RNN, activations=(GELU,)), RNN), r"activation 0 .*not one of"),
    "bounded_relu activation": (lambda: _spec_for(_broken(LSTM, activations=(
        ActivationDescriptor("sigmoid"), ActivationDescriptor("tanh"), ActivationDescriptor("bounded_relu"))), LSTM),
        r"activation 2 .*not one of"),
    # counts
    "a flagged input missing": (lambda: _edit_inputs(LSTM, 7, drop=True), r"takes 8 inputs"),
    "an unflagged input": (lambda: _spec_for(_broken(RNN, has_bias=False), make_desc("rnn", 3, "forward", ("b",))),
                           r"takes 3 inputs"),
    "LSTM without y_c": (lambda: _edit_outputs(LSTM, 2, drop=True), r"LSTM has 3 outputs"),
    "GRU with a y_c": (lambda: _spec_for(GRU, make_desc("lstm", 3, "bidirectional", ("b", "initial_h"))),
                       r"GRU has 2 outputs \(y, y_h\), got 3"),
    "RNN with one output": (lambda: _edit_outputs(RNN, 1, drop=True), r"RNN has 2 outputs"),
    # shapes
    "x of rank 2": (lambda: _edit_inputs(RNN, 0, (4, 2)), r"x must have rank 3"),
    "w with the wrong gate rows": (lambda: _edit_inputs(LSTM, 1, (1, 9, 3)), r"w has shape \[1, 9, 3\], expected "
                                   r"\[1, 12, 3\]"),
    "w with the wrong input size": (lambda: _edit_inputs(RNN, 1, (1, 3, 2)), r"w has shape"),
    "w for one direction of two": (lambda: _edit_inputs(GRU, 1, (1, 9, 3)), r"w has shape"),
    "r not square in hidden": (lambda: _edit_inputs(GRU, 2, (2, 9, 4)), r"r has shape"),
    "b of one set of biases": (lambda: _edit_inputs(LSTM, 3, (1, 12)), r"input 3 \(b\) has shape"),
    "sequence_lens of the wrong length": (lambda: _edit_inputs(LSTM, 4, (3,)), r"input 4 \(sequence_lens\) has shape"),
    "initial_h seq-major in a batch-major layer": (
        lambda: _edit_inputs(make_desc("rnn", 3, "forward", ("initial_h",), batch_major=True), 3, (1, 2, 3)),
        r"input 3 \(initial_h\) has shape \[1, 2, 3\], expected \[2, 1, 3\]"),
    "initial_h of the wrong batch": (lambda: _edit_inputs(LSTM, 5, (1, 3, 3)), r"input 5 \(initial_h\) has shape"),
    "initial_c of the wrong hidden": (lambda: _edit_inputs(LSTM, 6, (1, 2, 4)), r"input 6 \(initial_c\) has shape"),
    "p of two gates": (lambda: _edit_inputs(LSTM, 7, (1, 6)), r"input 7 \(p\) has shape"),
    "y of the wrong layout": (lambda: _edit_outputs(GRU, 0, (2, 4, 2, 3)), r"output 0 \(y\) has shape"),
    "y_h of the wrong shape": (lambda: _edit_outputs(GRU, 1, (2, 2, 4)), r"output 1 \(y_h\) has shape"),
    "y_c of the wrong shape": (lambda: _edit_outputs(LSTM, 2, (2, 1, 3)), r"output 2 \(y_c\) has shape"),
    # element types
    "int32 x": (lambda: _spec_for(RNN, dtype=DataType.INT32), r"input 0 must be a float type, not int32"),
    "float16 w with float32 x": (lambda: _edit_inputs(RNN, 1, dtype=DataType.FLOAT16),
                                 r"input 1 is float16 but input 0 is float32"),
    "float64 y_h": (lambda: _edit_outputs(RNN, 1, dtype=DataType.FLOAT64), r"output 1 is float64"),
    "int64 sequence_lens": (lambda: _edit_inputs(LSTM, 4, dtype=DataType.INT64),
                            r"sequence_lens\) must be int32, not int64"),
    "float sequence_lens": (lambda: _edit_inputs(LSTM, 4, dtype=DataType.FLOAT32),
                            r"sequence_lens\) must be int32, not float32"),
    "float16 initial_c after sequence_lens": (lambda: _edit_inputs(LSTM, 6, dtype=DataType.FLOAT16),
                                              r"input 6 is float16 but input 0 is float32"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_layer_is_refused(backend, name: str) -> None:
    make, reason = MALFORMED[name]
    assert_refused(backend, make(), reason)
