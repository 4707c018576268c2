"""CpuAcc RECURRENT (ONNX RNN, GRU, LSTM) against the NumPy float64 oracle of the conformance suite.

Every cell (GRU with linear_before_reset 0 and 1), direction and layout, with and without every
optional input, hidden sizes 1, 7 and 37, batch 1 and 3, ragged / zero / full sequence_lens, clip,
input_forget, non-default activations, an input size past the GEMM's K block (256), weights
constant (packed once at create) and given at run time (packed per execute); every kernel set this
machine runs at 1, 2, 3 and 7 threads, each thread count giving the same bits as one thread;
a reshaped workload sharing its source's packed weights.
Tolerance: rtol 1e-4, atol 1e-5 (float32 sums and the vector sigmoid/tanh of kern_math.h, a few
ulp each, carried through the steps). Then what CpuAcc refuses, with its reason, and
sequence_lens outside [0, seq] failing execute.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import plugnn
from plugnn import BackendError
from plugnn.descriptors import ActivationDescriptor, RecurrentDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType

from conformance.test_recurrent import make_desc, make_spec, random_inputs, recurrent_reference, shapes_of

from .common import HAVE_CPUACC, THREADS
from .common import execute as common_execute

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RTOL, ATOL = 1e-4, 1e-5
ALL_OPTIONAL = ("b", "sequence_lens", "initial_h", "initial_c", "p")
VARIANTS = {  # name: (cell, descriptor options)
    "rnn": ("rnn", {}),
    "gru": ("gru", {}),
    "gru_lbr": ("gru", {"linear_before_reset": True}),
    "lstm": ("lstm", {}),
}


def execute(rt: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """common.execute into NaN-filled outputs (a NaN left shows an element the kernel did not write)."""
    return common_execute(rt, layer, arrays, [np.full(info.shape, np.nan, np.float32) for info in layer.outputs])


def check(runtimes: dict[tuple[str, int], plugnn.Runtime], desc: RecurrentDescriptor, seq: int = 5,
          batch: int = 3, size: int = 4, seed: int = 0, lens: Sequence[int] | None = None,
          constant_weights: bool = True) -> None:
    inputs, outputs = shapes_of(desc, seq, batch, size)
    spec = make_spec(desc, inputs, outputs)
    arrays = random_inputs(desc, inputs, seed, lens)
    if constant_weights:  # w, r (and b, p) known at create: packed once
        constants = tuple(a if i in (1, 2) else None for i, a in enumerate(arrays))
        spec = LayerSpec(spec.kind, spec.name, spec.descriptor, spec.inputs, spec.outputs, constants=constants)
    expected = recurrent_reference(desc, arrays)
    first: dict[str, list[np.ndarray]] = {}
    for (isa, n), rt in runtimes.items():
        got = execute(rt, spec, arrays)
        if isa not in first:
            first[isa] = got
            for i, (actual, exp) in enumerate(zip(got, expected)):
                np.testing.assert_allclose(actual, exp.astype(np.float32), rtol=RTOL, atol=ATOL,
                                           err_msg=f"{desc} isa={isa} output {i}")
        else:
            for i, (actual, ref) in enumerate(zip(got, first[isa])):
                np.testing.assert_array_equal(actual, ref, err_msg=f"{desc} isa={isa} output {i}: "
                                              f"num_threads={n} differs from num_threads={THREADS[0]}")


def desc_of(variant: str, hidden: int, direction: str, optional: Sequence[str], **options: object
            ) -> RecurrentDescriptor:
    cell, extra = VARIANTS[variant]
    if cell != "lstm":
        optional = [o for o in optional if o not in ("initial_c", "p")]
    return make_desc(cell, hidden, direction, optional, **extra, **options)


@pytest.mark.parametrize("optional", [(), ALL_OPTIONAL, ("b", "initial_h")], ids=["none", "all", "b+initial_h"])
@pytest.mark.parametrize("batch_major", [False, True], ids=["seq_major", "batch_major"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_cells_directions_layouts(runtimes, variant: str, direction: str, batch_major: bool,
                                  optional: tuple[str, ...]) -> None:
    desc = desc_of(variant, 7, direction, optional, batch_major=batch_major)
    check(runtimes, desc, lens=[5, 2, 4] if "sequence_lens" in optional else None, seed=len(optional))


@pytest.mark.parametrize("constant_weights", [True, False], ids=["constant_w", "runtime_w"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("hidden", [1, 7, 37])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_hidden_and_batch_sizes(runtimes, variant: str, hidden: int, batch: int, constant_weights: bool) -> None:
    desc = desc_of(variant, hidden, "bidirectional", ("b", "initial_h", "initial_c", "p"))
    check(runtimes, desc, seq=6, batch=batch, size=5, seed=hidden + batch, constant_weights=constant_weights)


@pytest.mark.parametrize("lens", [[0, 6, 3], [0, 0, 0], [6, 6, 6], [1, 0, 6]], ids=["ragged", "zeros", "full", "mixed"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_sequence_lens(runtimes, variant: str, direction: str, lens: list[int]) -> None:
    """y past each length is 0, the state holds, y_h (y_c) is 0 for a length 0."""
    desc = desc_of(variant, 7, direction, ("b", "sequence_lens", "initial_h", "initial_c"))
    check(runtimes, desc, seq=6, batch=3, lens=lens, seed=3)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_clip_and_long_input(runtimes, variant: str) -> None:
    """clip bounds every gate's argument; an input of 300 (past the GEMM's K block of 256)."""
    desc = desc_of(variant, 37, "bidirectional", ("b",), clip=0.7)
    check(runtimes, desc, seq=9, batch=3, size=300, seed=11)


def test_lstm_input_forget(runtimes) -> None:
    desc = make_desc("lstm", 7, "bidirectional", ALL_OPTIONAL, input_forget=True)
    check(runtimes, desc, lens=[5, 0, 3], seed=5)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_non_default_activations(runtimes, variant: str) -> None:
    cell = VARIANTS[variant][0]
    acts = {"rnn": [ActivationDescriptor("leaky_relu", 0.1)],
            "gru": [ActivationDescriptor("hard_sigmoid", 0.2, 0.5), ActivationDescriptor("softsign")],
            "lstm": [ActivationDescriptor("hard_sigmoid", 0.2, 0.5), ActivationDescriptor("scaled_tanh", 1.5, 0.7),
                     ActivationDescriptor("elu", 0.9)]}[cell]
    reverse_acts = {"rnn": [ActivationDescriptor("relu")],
                    "gru": [ActivationDescriptor("sigmoid"), ActivationDescriptor("softplus")],
                    "lstm": [ActivationDescriptor("sigmoid"), ActivationDescriptor("linear", 0.5, 0.1),
                             ActivationDescriptor("thresholded_relu", 0.2)]}[cell]
    desc = desc_of(variant, 7, "bidirectional", ("b",), acts=acts + reverse_acts)
    check(runtimes, desc, seed=9)


def test_empty_sequence_and_batch(runtimes) -> None:
    for seq, batch in ((0, 3), (4, 0)):
        desc = make_desc("lstm", 7, "bidirectional", ("b", "initial_h"))
        check(runtimes, desc, seq=seq, batch=batch, seed=1)


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.FLOAT64, DataType.BFLOAT16])
def test_other_float_types_are_refused(dtype: DataType) -> None:
    desc = make_desc("lstm", 3, "forward", ("b",))
    inputs, outputs = shapes_of(desc, 2, 1, 2)
    spec = make_spec(desc, inputs, outputs, dtype)
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(spec)
    assert not support.supported
    assert support.reason == f"CpuAcc runs Recurrent on float32 only; input 0 is {dtype.name.lower()}"


@pytest.mark.parametrize("bad", [-1, 5])
def test_sequence_lens_outside_fails_execute(bad: int) -> None:
    desc = make_desc("gru", 3, "forward", ("sequence_lens",))
    inputs, outputs = shapes_of(desc, 4, 2, 2)
    spec = make_spec(desc, inputs, outputs)
    arrays = random_inputs(desc, inputs, 0, [2, bad])
    with plugnn.Runtime() as rt, pytest.raises(BackendError, match=r"sequence_lens\[1\] = %d is outside \[0, 4\]" % bad):
        execute(rt, spec, arrays)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_reshape_keeps_the_packed_weights(variant: str) -> None:
    """A workload reshaped to another sequence length and batch shares its source's packed w and r
    (packed_weight_bytes unchanged) and computes the new shapes."""
    desc = desc_of(variant, 7, "bidirectional", ("b", "initial_h"))
    in1, out1 = shapes_of(desc, 5, 3, 4)
    in2, out2 = shapes_of(desc, 8, 1, 4)
    weights = random_inputs(desc, in1, 2)
    arrays = random_inputs(desc, in2, 4)
    arrays[1:3] = weights[1:3]
    for a in weights[1:3]:
        a.setflags(write=False)
    constants = tuple(a if i in (1, 2) else None for i, a in enumerate(weights))

    def layer(inputs, outputs) -> LayerSpec:
        spec = make_spec(desc, inputs, outputs)
        return LayerSpec(spec.kind, spec.name, spec.descriptor, spec.inputs, spec.outputs, constants=constants)

    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2}}) as rt:
        backend = rt.backend("CpuAcc")
        factory = backend.create_workload_factory()
        source = factory.create_workload(layer(in1, out1))
        packed = int(backend.get_option("packed_weight_bytes"))
        assert packed > 0
        reshaped = source.reshape(layer(in2, out2))
        assert int(backend.get_option("packed_weight_bytes")) == packed
        source.close()
        outs = [np.full(s, np.nan, np.float32) for s in out2]
        reshaped.execute(arrays, outs)
        for actual, expected in zip(outs, recurrent_reference(desc, arrays)):
            np.testing.assert_allclose(actual, expected.astype(np.float32), rtol=RTOL, atol=ATOL)
        reshaped.close()
        factory.close()
        assert int(backend.get_option("packed_weight_bytes")) == 0
