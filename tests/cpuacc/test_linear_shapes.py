"""CpuAcc's fused linear layers (ops/fused_linear.h: a MatMul or Gemm with a constant b and its
bias, residual, activation, normalization, and the Reshapes around it) at other rows: their
payload holds no shape, so one network with a symbolic batch or length keeps the fused layer's
workload and passes it the new dims at execute (ABI 1.3), giving the bits of a network fused at
those dims. GPT-2's Conv1D (Reshape to rows, Gemm, Reshape back) included: its input-side Reshape
merges axes, which the runtime checks at each new shape (plugnn.reshape_groups).

Oracle: a session built for the one shape gives the same bits; both against NumPy in float64
within 1e-5 * sqrt(K)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.descriptors import LayerKind

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

K, N = 48, 40
RNG = np.random.default_rng(12)
W = (RNG.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
BIAS = RNG.standard_normal(N).astype(np.float32)


def model(conv1d: bool) -> bytes:
    """x [B, L, K] -> x @ W + bias -> relu -> [B, L, N]; with conv1d, as transformers' GPT-2 exports
    it: Reshape to [B * L, K], Gemm, Reshape back to [B, L, N] (shapes from the input's)."""
    if conv1d:
        nodes = [helper.make_node("Shape", ["x"], ["bl"], start=0, end=2),
                 helper.make_node("Concat", ["minus1", "k"], ["rows"], axis=0),
                 helper.make_node("Concat", ["bl", "n"], ["back"], axis=0),
                 helper.make_node("Reshape", ["x", "rows"], ["x2"]),
                 helper.make_node("Gemm", ["x2", "w", "bias"], ["g"]),
                 helper.make_node("Reshape", ["g", "back"], ["h"]),
                 helper.make_node("Relu", ["h"], ["y"])]
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
                 helper.make_node("Add", ["m", "bias"], ["h"]),
                 helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(
        nodes, "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "L", N])],
        [numpy_helper.from_array(W, "w"), numpy_helper.from_array(BIAS, "bias"),
         numpy_helper.from_array(np.asarray([-1], np.int64), "minus1"),
         numpy_helper.from_array(np.asarray([K], np.int64), "k"),
         numpy_helper.from_array(np.asarray([N], np.int64), "n")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("conv1d", [False, True], ids=["matmul", "gpt2_conv1d"])
def test_a_fused_linear_takes_every_batch_and_length_at_execute(conv1d: bool) -> None:
    data = model(conv1d)
    rng = np.random.default_rng(5)
    with plugnn.InferenceSession(data, backends=["CpuAcc"]) as session:
        for step, (b, length) in enumerate([(1, 7), (1, 8), (1, 9), (3, 9), (2, 100), (4, 33), (1, 1)]):
            x = rng.standard_normal((b, length, K)).astype(np.float32)
            got, = session.run(None, {"x": x})
            loaded = session.loaded_for({"x": x.shape})
            assert loaded is not None
            fused = [n.name for n in loaded.optimized.layers if n.kind is LayerKind.PRECOMPILED]
            assert len(fused) == 1
            if step:
                assert loaded.refused_layers == [] and loaded.reshaped_layers == []
                assert fused[0] in loaded.rebound_layers
            with plugnn.InferenceSession(data, backends=["CpuAcc"]) as alone:  # fused at these dims
                want, = alone.run(None, {"x": x})
            np.testing.assert_array_equal(got, want, err_msg=f"batch {b}, length {length}")
            expected = np.maximum(x.astype(np.float64) @ W.astype(np.float64) + BIAS, 0)
            assert np.abs(got - expected).max() <= 1e-5 * np.sqrt(K) * max(1.0, np.abs(expected).max())
        assert session.networks_built == 1


def test_from_one_row_gpt2s_reshape_is_ambiguous_and_the_layer_is_re_sized_instead() -> None:
    """[1, 1, K] -> [1, K] pairs the leading 1s and merges the second 1 with K (plugnn.reshape_groups),
    so at [4, 33, K] the rule gives [4, 1584], not the Reshape's [132, K]: the runtime does not pass
    the fused layer those dims at execute but re-sizes its workload (pn_workload.reshape): right."""
    data = model(True)
    rng = np.random.default_rng(6)
    with plugnn.InferenceSession(data, backends=["CpuAcc"]) as session:
        for step, (b, length) in enumerate([(1, 1), (4, 33)]):
            x = rng.standard_normal((b, length, K)).astype(np.float32)
            got, = session.run(None, {"x": x})
            loaded = session.loaded_for({"x": x.shape})
            if step:
                fused = [n.name for n in loaded.optimized.layers if n.kind is LayerKind.PRECOMPILED]
                assert loaded.reshaped_layers == fused and fused[0] not in loaded.rebound_layers
            expected = np.maximum(x.astype(np.float64) @ W.astype(np.float64) + BIAS, 0)
            assert np.abs(got - expected).max() <= 1e-5 * np.sqrt(K) * max(1.0, np.abs(expected).max())
