"""onnxruntime's com.microsoft products (its ContribOperators document's semantics), imported as
ONNX nodes (contrib_nodes.py): FusedMatMul, FusedGemm, MatMulNBits.

- FusedMatMul(A, B; alpha, transA, transB, transBatchA, transBatchB): alpha * (A' @ B'), where
  transBatch moves dim 0 behind the batch dims ([M, b..., K] read as [b..., M, K]) and trans
  swaps the last two dims (ranks >= 2): Transposes, MatMul and a Mul by alpha.
- FusedGemm: ONNX Gemm followed by the activation named by `activation` (Relu, LeakyRelu,
  Sigmoid, Tanh, HardSigmoid, Elu, Celu, Selu, Softplus, Softsign, ThresholdedRelu) with
  `activation_alpha`, `activation_beta`, `activation_gamma` as its alpha, beta, gamma.
- MatMulNBits(A, B, scales[, zero_points][, g_idx][, bias]; K, N, bits, block_size): B's
  2- to 8-bit block-quantized weights are dequantized at import, (q - zero_point) * scale per
  block of K, into a float [K, N] constant of A's type, and the node is a MatMul (and the bias
  Add): the weights take 32 bits an element in memory, not `bits`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, check_float, check_same, dtype_of
from plugnn.onnx.registry import MICROSOFT_DOMAIN, op


def _matmul_perm(rank: int, trans: bool, trans_batch: bool) -> list[int] | None:
    if rank < 2:
        return None
    perm = list(range(1, rank - 1)) + [0, rank - 1] if trans_batch else list(range(rank))
    if trans:
        perm[-2], perm[-1] = perm[-1], perm[-2]
    return None if perm == list(range(rank)) else perm


@op("FusedMatMul", ("alpha", "transA", "transB", "transBatchA", "transBatchB"), domain=MICROSOFT_DOMAIN)
def fused_matmul(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "A")
    check_same(ctx, 1, "B", dtype)
    operands = []
    for i, what in ((0, "A"), (1, "B")):
        rank = len(ctx.shape(i))
        trans_batch = bool(ctx.attr(f"transBatch{what}", 0))
        if trans_batch and (rank < 3 or len(ctx.shape(0)) != len(ctx.shape(1))):
            raise ctx.error(f"attribute 'transBatch{what}' needs A and B of one rank >= 3; they have shapes "
                            f"{list(ctx.shape(0))} and {list(ctx.shape(1))}")
        perm = _matmul_perm(rank, bool(ctx.attr(f"trans{what}", 0)), trans_batch)
        operand = nodes.input(i)
        operands.append(operand if perm is None else nodes.add("Transpose", [operand], f"transpose_{what}", perm=perm))
    alpha = float(ctx.attr("alpha", 1.0))
    product = nodes.add("MatMul", operands, "matmul", outputs=[nodes.output(0) if alpha == 1.0 else None])
    if alpha != 1.0:
        nodes.add("Mul", [product, nodes.const(alpha, "alpha", dtype)], "alpha", outputs=[nodes.output(0)])
    return nodes.expansion()


# activation -> the attributes it takes of FusedGemm's activation_alpha, _beta, _gamma
_ACTIVATIONS: dict[str, tuple[str, ...]] = {
    "Relu": (), "Sigmoid": (), "Tanh": (), "Softplus": (), "Softsign": (), "LeakyRelu": ("alpha",),
    "HardSigmoid": ("alpha", "beta"), "Elu": ("alpha",), "Celu": ("alpha",), "ThresholdedRelu": ("alpha",),
    "Selu": ("alpha", "gamma"),
}


@op("FusedGemm", ("alpha", "beta", "transA", "transB", "activation", "activation_alpha", "activation_beta",
                  "activation_gamma"), domain=MICROSOFT_DOMAIN)
def fused_gemm(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    activation = ctx.attr("activation")
    if activation is None:
        raise ctx.error("attribute 'activation' is absent; FusedGemm is Gemm with an activation (onnxruntime refuses "
                        "it without one too)")
    if activation not in _ACTIVATIONS:
        raise ctx.unsupported_value("activation", activation, ", ".join(sorted(_ACTIVATIONS)))
    gemm_attrs = {k: ctx.attr(k) for k in ("alpha", "beta", "transA", "transB") if ctx.has(k)}
    inputs = [nodes.input(i) for i in range(min(ctx.num_inputs, 3))]
    product = nodes.add("Gemm", inputs, "gemm", **gemm_attrs)
    attrs = {k: float(ctx.attr(f"activation_{k}")) for k in _ACTIVATIONS[activation] if ctx.has(f"activation_{k}")}
    nodes.add(activation, [product], activation.lower(), outputs=[nodes.output(0)], **attrs)
    return nodes.expansion()


# ---- MatMulNBits -------------------------------------------------------------------------------


def _unpack(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first `count` `bits`-bit unsigned values of each row of `packed` (uint8 [..., n]), the
    first value in the lowest bits of the first byte."""
    stream = np.unpackbits(packed, axis=-1, bitorder="little")
    usable = (stream.shape[-1] // bits) * bits
    groups = stream[..., :usable].reshape(*stream.shape[:-1], -1, bits)
    values = (groups.astype(np.uint16) << np.arange(bits, dtype=np.uint16)).sum(axis=-1)
    return values[..., :count].astype(np.int32)


def dequantize_nbits(ctx: NodeContext, dtype: np.dtype) -> np.ndarray:
    """MatMulNBits' weights as a float [K, N] array of `dtype`."""
    k, n = int(ctx.attr("K", 0)), int(ctx.attr("N", 0))
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size", 0))
    if k <= 0 or n <= 0:
        raise ctx.error(f"attributes 'K' = {k} and 'N' = {n} must be positive")
    if not 2 <= bits <= 8:
        raise ctx.unsupported_value("bits", bits, "2 to 8")
    if block < 16 or block & (block - 1):
        raise ctx.unsupported_value("block_size", block, "a power of two >= 16")
    blocks = -(-k // block)
    blob = block * bits // 8
    packed = np.asarray(ctx.const(1, "B"))
    if packed.dtype != np.uint8 or packed.size != n * blocks * blob:
        raise ctx.error(f"input 1 (B) is {packed.dtype} of shape {list(packed.shape)}; MatMulNBits with K={k}, "
                        f"N={n}, bits={bits}, block_size={block} takes uint8 [{n}, {blocks}, {blob}]")
    q = _unpack(packed.reshape(n, blocks, blob), bits, block)  # [N, blocks, block]
    scales = np.asarray(ctx.const(2, "scales"))
    if scales.size != n * blocks:
        raise ctx.error(f"input 2 (scales) has shape {list(scales.shape)}; MatMulNBits takes [{n}, {blocks}]")
    scales = scales.reshape(n, blocks, 1).astype(np.float32)
    if ctx.has_input(3):
        zp = np.asarray(ctx.const(3, "zero_points"))
        if zp.dtype == np.uint8:
            row = -(-blocks * bits // 8)
            if zp.size != n * row:
                raise ctx.error(f"input 3 (zero_points) has shape {list(zp.shape)}; packed uint8 zero points take "
                                f"[{n}, {row}]")
            zero = _unpack(zp.reshape(n, row), bits, blocks).reshape(n, blocks, 1).astype(np.float32)
        else:
            if zp.size != n * blocks:
                raise ctx.error(f"input 3 (zero_points) has shape {list(zp.shape)}; MatMulNBits takes "
                                f"[{n}, {blocks}]")
            zero = zp.reshape(n, blocks, 1).astype(np.float32)
    else:
        zero = np.float32(2 ** (bits - 1))
    if ctx.has_input(4):
        g_idx = np.asarray(ctx.const(4, "g_idx"))
        if not np.array_equal(g_idx.reshape(-1), np.arange(k) // block):
            raise ctx.error("input 4 (g_idx) reorders the blocks; plugnn takes only the identity grouping "
                            "(the input is deprecated)")
    weights = ((q.astype(np.float32) - zero) * scales).reshape(n, blocks * block)[:, :k]
    return np.ascontiguousarray(weights.T).astype(dtype)


@op("MatMulNBits", ("K", "N", "bits", "block_size", "accuracy_level"), domain=MICROSOFT_DOMAIN)
def matmul_nbits(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "A", ("float32", "float16", "bfloat16"))
    if dtype_of(ctx, 2) != dtype:
        raise ctx.error(f"input 2 (scales) is {dtype_of(ctx, 2).name}; MatMulNBits takes scales of A's type "
                        f"({dtype.name})")
    k = int(ctx.attr("K", 0))
    if ctx.shape(0)[-1:] != (k,):
        raise ctx.error(f"input 0 (A) has shape {list(ctx.shape(0))}; its last dim must be K = {k}")
    weights = nodes.const(dequantize_nbits(ctx, dtype), "weights")
    biased = ctx.has_input(5)
    product = nodes.add("MatMul", [nodes.input(0), weights], "matmul", outputs=[None if biased else nodes.output(0)])
    if biased:
        check_same(ctx, 5, "bias", dtype)
        nodes.add("Add", [product, nodes.input(5)], "bias_add", outputs=[nodes.output(0)])
    return nodes.expansion()
