"""CpuAcc's MATMUL (plugins/accel/src/ops/matmul.c) on the shapes transformers export: attention's
[B, H, S, D] @ [B, H, D, S] and [B, H, S, S] @ [B, H, S, D], broadcast batch dims ([S, D] @
[B, H, D, S], [1, H, ...] @ [B, 1, ...]), operands coming from Transpose layers, and the
projections [B, S, E] @ [E, F] with constant weights (one [B * S, E] GEMM); odd sizes, rank-1
operands, empty ones; every kernel set (option isa) at 1, 2, 3 and 7 threads: the batches split
over the threads as whole GEMMs (the last batches % threads over all of them), a read in place,
a constant b packed once.

Oracle: NumPy matmul in float64. Tolerance: max|a - b| <= 1e-5 * sqrt(k) * max(1, max|b|) (float32
sums of k products of standard normal values; the error grows about like sqrt(k)); results are
the same bits at every thread count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

import plugnn
from plugnn import Network
from plugnn.descriptors import LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, run

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
RNG = np.random.default_rng(2024)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(actual: np.ndarray, expected: np.ndarray, k: int, what: str) -> None:
    assert actual.shape == expected.shape and actual.dtype == np.float32, what
    if expected.size == 0:
        return
    scale = max(1.0, float(np.abs(expected).max()))
    err = float(np.abs(actual.astype(np.float64) - expected).max())
    assert err <= 1e-5 * max(1.0, np.sqrt(k)) * scale, f"{what}: max|diff| {err:g} (scale {scale:g}, k {k})"


def matmul_spec(a_shape: Sequence[int], b_shape: Sequence[int], b_constant: np.ndarray | None = None,
                name: str = "mm") -> LayerSpec:
    out = np.matmul(np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)).shape
    return LayerSpec(LayerKind.MATMUL, name, None,
                     (TensorInfo(tuple(a_shape), DataType.FLOAT32), TensorInfo(tuple(b_shape), DataType.FLOAT32)),
                     (TensorInfo(tuple(out), DataType.FLOAT32),), constants=(None, b_constant))


def check_layer(runtimes: Mapping[tuple[str, int], plugnn.Runtime], a: np.ndarray, b: np.ndarray,
                b_constant: bool = False) -> None:
    """Every kernel set within the tolerance of NumPy; every thread count the same bits."""
    spec = matmul_spec(a.shape, b.shape, b if b_constant else None, f"mm{list(a.shape)}@{list(b.shape)}")
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    first: dict[str, np.ndarray] = {}
    for (isa, n), rt in runtimes.items():
        y = run(rt, spec, [a, b])
        if isa not in first:
            first[isa] = y
            assert_close(y, expected, a.shape[-1], f"{spec.name} on {isa}")
        else:
            np.testing.assert_array_equal(y, first[isa], err_msg=f"{spec.name} on {isa}: {n} threads")


# ---- attention ---------------------------------------------------------------------------------

ATTENTION = [(1, 2, 32, 16), (2, 3, 37, 24), (1, 12, 128, 64), (2, 2, 33, 128), (1, 4, 256, 128), (3, 1, 512, 16)]


@pytest.mark.parametrize("b,h,s,d", ATTENTION)
def test_query_times_key_transposed(runtimes: Mapping[tuple[str, int], plugnn.Runtime], b: int, h: int, s: int,
                                    d: int) -> None:
    check_layer(runtimes, rand(b, h, s, d), rand(b, h, d, s))


@pytest.mark.parametrize("b,h,s,d", ATTENTION)
def test_probabilities_times_values(runtimes: Mapping[tuple[str, int], plugnn.Runtime], b: int, h: int, s: int,
                                    d: int) -> None:
    p = np.abs(rand(b, h, s, s)) / np.float32(s)
    check_layer(runtimes, p, rand(b, h, s, d))


# A decode step's products: one query row against a cache given at run time (the matrix-vector
# path: every batch count against the thread counts, a single product small and large, rank 2).
@pytest.mark.parametrize("a_shape,b_shape", [
    ((4, 4, 1, 32), (4, 4, 32, 41)),    # [B, H, 1, D] @ [B, H, D, T]: 16 products
    ((4, 4, 1, 41), (4, 4, 41, 32)),    # probabilities @ values
    ((1, 2, 1, 64), (1, 2, 64, 1)),     # fewer products than threads, n = 1
    ((3, 1, 17), (3, 17, 129)),         # 3 products: as many as threads, or fewer
    ((1, 300), (300, 333)),             # one product, k * n past 64 Ki: split over the threads as a GEMM
    ((1, 5), (5, 7)),
    ((2, 1, 1, 0), (2, 1, 0, 9)),       # k = 0: zeros
])
def test_one_row_against_a_matrix_given_at_run_time(runtimes: Mapping[tuple[str, int], plugnn.Runtime],
                                                    a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    check_layer(runtimes, rand(*a_shape), rand(*b_shape))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((128, 64), (2, 12, 64, 128)),        # [S, D] @ [B, H, D, S]
    ((1, 12, 40, 32), (2, 1, 32, 40)),    # [1, H, ...] @ [B, 1, ...]
    ((2, 1, 40, 32), (1, 5, 32, 40)),     # [B, 1, ...] @ [1, H, ...]
    ((2, 5, 40, 32), (32, 40)),           # b shared by every batch: one folded GEMM
    ((2, 5, 40, 32), (1, 1, 32, 40)),     # the same through size-1 batch dims
    ((2, 1, 40, 32), (2, 5, 32, 40)),     # a broadcast over H only
    ((3, 40, 32), (5, 1, 32, 7)),         # batch dims of different ranks
    ((7,), (3, 7, 9)),                    # rank-1 a
    ((3, 9, 7), (7,)),                    # rank-1 b
    ((7,), (7,)),                         # a dot product
    ((2, 3, 1, 50), (2, 3, 50, 70)),      # one row per batch
    ((2, 3, 50, 70), (2, 3, 70, 1)),      # one column per batch
    ((0, 3, 5, 4), (4, 6)),               # no batches
    ((2, 3, 5, 0), (2, 3, 0, 6)),         # k = 0: zeros
])
def test_broadcast_and_rank_promotion(runtimes: Mapping[tuple[str, int], plugnn.Runtime],
                                      a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    check_layer(runtimes, rand(*a_shape), rand(*b_shape))


# ---- projections with constant weights -----------------------------------------------------------


@pytest.mark.parametrize("a_shape,b_shape", [
    ((1, 128, 96), (96, 160)),       # [B, S, E] @ [E, F]
    ((3, 37, 64), (64, 100)),        # odd rows: the folded GEMM's last panel is partial
    ((2, 4, 16, 33), (33, 17)),      # rank 4 with a rank-2 weight
    ((1, 1, 300), (300, 70)),        # one row: the GEMV over the packed weight
    ((2, 5, 24, 16), (5, 16, 24)),   # weights with batch dims: each matrix packed
    ((2, 5, 24, 16), (1, 5, 16, 24)),
    ((4, 16), (16,)),                # a constant vector
])
def test_constant_weights(runtimes: Mapping[tuple[str, int], plugnn.Runtime], a_shape: tuple[int, ...],
                          b_shape: tuple[int, ...]) -> None:
    check_layer(runtimes, rand(*a_shape), rand(*b_shape), b_constant=True)


def test_a_folded_projection_gives_the_bits_of_the_two_dimensional_product(
        runtimes: Mapping[tuple[str, int], plugnn.Runtime]) -> None:
    """[B, S, E] @ [E, F] is one [B * S, E] GEMM: the same bits as that product."""
    a, w = rand(3, 29, 48), rand(48, 56)
    for (isa, n), rt in runtimes.items():
        folded = run(rt, matmul_spec(a.shape, w.shape, w), [a, w])
        flat = run(rt, matmul_spec((87, 48), w.shape, w), [a.reshape(87, 48), w])
        np.testing.assert_array_equal(folded.reshape(87, 56), flat, err_msg=f"{isa}, {n} threads")


# ---- operands from Transpose layers, in networks --------------------------------------------------


def attention_network(batch: int, seq: int, heads: int, d: int) -> tuple[Network, dict[str, np.ndarray], np.ndarray]:
    """Q, K, V [B, S, H * D] -> split heads (Reshape, Transpose to [B, H, S, D], K to [B, H, D, S]) ->
    Q K^T -> Softmax -> @ V -> Transpose, Reshape back -> @ Wo (constant): what transformers
    export, in float64 as well."""
    e = heads * d
    wo = rand(e, e) / np.float32(np.sqrt(e))
    net = Network("attention")
    q, k, v = (net.add_input(n, (batch, seq, e)) for n in ("q", "k", "v"))

    def split(t: object, perm: tuple[int, ...], name: str) -> object:
        return net.add_transpose(net.add_reshape(t, (batch, seq, heads, d), name=f"{name}_split"), perm, name=f"{name}_t")

    scores = net.add_matmul(split(q, (0, 2, 1, 3), "q"), split(k, (0, 2, 3, 1), "k"), name="qk")
    probs = net.add_softmax(scores, -1, name="softmax")
    ctx = net.add_matmul(probs, split(v, (0, 2, 1, 3), "v"), name="pv")
    merged = net.add_reshape(net.add_transpose(ctx, (0, 2, 1, 3), name="merge_t"), (batch, seq, e), name="merge")
    net.add_output(net.add_matmul(merged, wo, name="out_proj"), "y")
    inputs = {n: rand(batch, seq, e) / np.float32(2) for n in ("q", "k", "v")}

    def heads_of(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64).reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)

    s = heads_of(inputs["q"]) @ heads_of(inputs["k"]).transpose(0, 1, 3, 2)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expected = (p @ heads_of(inputs["v"])).transpose(0, 2, 1, 3).reshape(batch, seq, e) @ wo
    return net, inputs, expected


@pytest.mark.parametrize("batch,seq,heads,d", [(1, 128, 12, 64), (2, 37, 3, 24), (1, 16, 2, 8)])
def test_attention_block_with_transposed_operands(batch: int, seq: int, heads: int, d: int) -> None:
    net, inputs, expected = attention_network(batch, seq, heads, d)
    first: dict[str, np.ndarray] = {}
    for isa in ISAS:
        for n in (1, 2, 3):
            with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa}}) as rt:
                optimized = plugnn.optimize(net, rt, ["CpuAcc"])
                assert {r["backend"] for r in optimized.assignments()} == {"CpuAcc"}
                with rt.load_network(optimized) as loaded:
                    y = loaded.run(inputs)["y"].copy()
            if isa not in first:
                first[isa] = y
                assert_close(y, expected, heads * d, f"attention {batch}x{seq}x{heads}x{d} on {isa}")
            else:
                np.testing.assert_array_equal(y, first[isa], err_msg=f"attention on {isa}: {n} threads")


# ---- the Transpose layers feeding them -------------------------------------------------------


@pytest.mark.parametrize("shape,perm", [
    ((2, 37, 3, 24), (0, 2, 3, 1)),    # [B, S, H, D] -> K^T [B, H, D, S]: 16 x 16 blocks, partial ones
    ((1, 12, 128, 64), (0, 1, 3, 2)),  # [B, H, S, D] -> [B, H, D, S]
    ((2, 37, 3, 24), (0, 2, 1, 3)),    # split heads: rows of D stay contiguous
    ((130, 70), (1, 0)),               # a plain matrix: its q dim split in chunks of 64
    ((3, 1, 17, 1, 5), (4, 2, 0, 1, 3)),
    ((0, 5, 3), (2, 1, 0)),
])
def test_transposes_of_attention_operands(runtimes: Mapping[tuple[str, int], plugnn.Runtime],
                                          shape: tuple[int, ...], perm: tuple[int, ...]) -> None:
    from plugnn.descriptors import TransposeDescriptor

    x = rand(*shape)
    expected = x.transpose(perm)
    spec = LayerSpec(LayerKind.TRANSPOSE, f"transpose{list(perm)}", TransposeDescriptor(perm),
                     (TensorInfo(shape, DataType.FLOAT32),), (TensorInfo(expected.shape, DataType.FLOAT32),))
    for (isa, n), rt in runtimes.items():
        np.testing.assert_array_equal(run(rt, spec, [x]), expected, err_msg=f"{spec.name} on {isa}, {n} threads")
