"""CpuAcc's SGEMM blocking around the M block limit (plugins/accel/src/gemm/gemm.c, gemm_job): with
B prepacked (a Gemm's constant weights) a job of up to twice the arch's mc rows is one M block with
narrower N chunks. Rows on both sides of mc and 2 mc for every kernel set (AVX-512 mc 112 x mr
7, AVX2 120 x 6, portable 128), K over several K blocks, N over several N chunks and a partial
last panel; every thread count gives the same bits, and each result is within
1e-5 * sqrt(K) of NumPy's float64 product (the tolerance of tests/cpuacc's linear tests)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn

from .common import CONFIGS, HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(2026)


def gemm_model(k: int, n: int, w: np.ndarray, bias: np.ndarray) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1), helper.make_node("Relu", ["g"], ["y"])],
        "gemm_blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("k, n", [(300, 1000), (1100, 33)], ids=["k300_n1000", "k1100_n33"])
def test_rows_around_the_m_block_limit(k: int, n: int) -> None:
    w = (RNG.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    data = gemm_model(k, n, w, bias)
    rows = [7, 112, 113, 119, 120, 121, 128, 129, 150, 224, 225, 239, 240, 241, 256, 257]
    xs = {m: RNG.standard_normal((m, k)).astype(np.float32) for m in rows}
    by_isa: dict[str, dict[int, np.ndarray]] = {}
    for isa, threads in CONFIGS:
        options = {"CpuAcc": {"num_threads": str(threads), "isa": isa}}
        with plugnn.InferenceSession(data, backends=["CpuAcc"], backend_options=options) as session:
            for m, x in xs.items():
                y = session.run(None, {"x": x})[0]
                first = by_isa.setdefault(isa, {})
                if m not in first:
                    exact = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
                    np.testing.assert_allclose(y, exact, rtol=0, atol=1e-5 * np.sqrt(k),
                                               err_msg=f"isa={isa} M={m}")
                    first[m] = y
                else:
                    np.testing.assert_array_equal(y, first[m], err_msg=f"isa={isa} M={m} threads={threads}")
