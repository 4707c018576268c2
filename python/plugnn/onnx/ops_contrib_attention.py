"""onnxruntime's com.microsoft attention operators (its ContribOperators document's semantics, and
its CPU kernels' where the document is silent), imported as ONNX nodes (contrib_nodes.py):
Attention, MultiHeadAttention, GroupQueryAttention, RotaryEmbedding.

Every attention is the unfused form: Q, K, V split into heads (Reshape, Transpose),
MatMul(Q, K^T), Mul by the scale (default 1/sqrt(head_size)), Add of the mask and bias,
Softmax over the last axis, MatMul with V, the heads merged back: the pattern CpuAcc fuses into
one attention layer. `self_attention` is the part after the Q, K, V projection, which
QAttention (ops_contrib_quantization.py) shares.

- Attention(input, weights[, bias][, mask_index][, past][, attention_bias]): the Q, K, V
  projection is one MatMul (+ bias) split by `qkv_hidden_sizes`. mask_index: [B, T] or
  [B, S, T] (0 masked: `mask_filter_value`, default -10000, added), [B] (end positions: right
  padding) or [2B] (end and start positions). `unidirectional` masks the future with the
  type's lowest value. `past` [2, B, N, P, h] is concatenated before K and V; output 1
  (present) is [2, B, N, P + S, h]. Not supported: a 4-D or [3B + 2] mask, do_rotary,
  past_present_share_buffer, past_sequence_length.
- MultiHeadAttention(query, key, value[, bias][, key_padding_mask][, attention_bias]
  [, past_key][, past_value]): query [B, S, H]; key and value [B, L, H] (projected with the bias's
  slices), [B, N, L, h] (cross attention, already in heads; no bias), or packed: query
  [B, S, N, 3, h] alone, or key [B, L, N, 2, h] with no value. key_padding_mask as Attention's
  mask. past_key and past_value [B, N, P, h] go before K and V; outputs 1 and 2 are the present
  key and value. Not supported: output 3 (qk), past_sequence_length, cache_indirection.
- GroupQueryAttention(query, key, value, past_key, past_value, seqlens_k, total_sequence_length
  [, cos_cache, sin_cache][, position_ids][, attention_bias]): `kv_num_heads` heads of K and V
  shared by `num_heads / kv_num_heads` query heads each, always causal. total_sequence_length
  must be known at import (a constant, or bound by the dynamic path); seqlens_k (total length - 1
  per batch) is read at run time: each batch's new keys and values are written after its past
  length into the present key and value ([B, kv_num_heads, max(total, P), h], zeros after them),
  and query s of batch b sees keys up to past_b + s (the `local_window_size` last ones, its own
  included, with a window: what onnxruntime's CPU kernel computes). Packed QKV (query [B, S, (N + 2 kv) h] alone), `do_rotary` with the caches (as
  RotaryEmbedding, positions past_b + s or position_ids), `softcap` and attention_bias are
  supported. Not supported: smooth_softmax, head_sink, qk_output.
- RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input [B, S, H] (heads of
  H / num_heads, or of 2 * cos_cache's width) or [B, N, S, h]; position_ids [1] (an offset:
  positions p + s) or [B, S]; the first `rotary_embedding_dim` (default: 2 * cos_cache's width)
  elements of each head rotated, halves (or interleaved pairs with `interleaved`) as real and
  imaginary parts; the rest pass through. Not supported: is_packed_batching.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, check_float, check_int, check_same, refuse_outputs, shape_of
from plugnn.onnx.registry import MICROSOFT_DOMAIN, op

MASK_FILTER = -10000.0  # onnxruntime's default mask_filter_value


def _positive(ctx: NodeContext, name: str) -> int:
    value = ctx.attr(name)
    if value is None or int(value) <= 0:
        raise ctx.error(f"attribute {name!r} must be given and positive (got {value!r})")
    return int(value)


def _refuse_attrs(ctx: NodeContext, names: tuple[str, ...]) -> None:
    for name in names:
        if ctx.attr(name, 0):
            raise ctx.unsupported_value(name, ctx.attr(name), "0 (plugnn does not import this form)")


def _refuse_inputs(ctx: NodeContext, indices: dict[int, str]) -> None:
    for i, what in indices.items():
        if ctx.has_input(i):
            raise ctx.error(f"input {i} ({what}) is given; plugnn does not import that form of {ctx.op_type}")


# ---- heads ------------------------------------------------------------------------------------


def _to_heads(nodes: Nodes, x: str, batch: int, length: int, heads: int, size: int, role: str) -> str:
    """[B, L, heads * size] -> [B, heads, L, size]."""
    split = nodes.add("Reshape", [x, nodes.ints([batch, length, heads, size], f"{role}_heads_shape")],
                      f"{role}_split_heads")
    return nodes.add("Transpose", [split], f"{role}_to_heads", perm=[0, 2, 1, 3])


def _repeat_heads(nodes: Nodes, x: str, batch: int, kv_heads: int, factor: int, length: int, size: int,
                  role: str) -> str:
    """[B, kv, L, h] -> [B, kv * factor, L, h], each head repeated `factor` times in place."""
    if factor == 1:
        return x
    wide = nodes.add("Unsqueeze", [x, nodes.ints([2], f"{role}_axis")], f"{role}_unsqueeze")
    grown = nodes.add("Expand", [wide, nodes.ints([batch, kv_heads, factor, length, size], f"{role}_grown_shape")],
                      f"{role}_expand")
    return nodes.add("Reshape", [grown, nodes.ints([batch, kv_heads * factor, length, size], f"{role}_shape")],
                     f"{role}_repeat")


@dataclass
class _Scores:
    """What goes between Q K^T and the softmax."""

    scale: float
    additive: list[str]  # tensors added to the scaled scores, in order
    softcap: float = 0.0


def _attend(nodes: Nodes, q: str, k: str, v: str, scores: _Scores, dtype: np.dtype, batch: int, seq: int,
            heads: int, v_size: int, output: str | None) -> str:
    """softmax(scale * q @ k^T (+ additive)) @ v for q [B, N, S, h], k [B, N, T, h], v [B, N, T, hv];
    the heads merged into [B, S, N * hv]."""
    k_t = nodes.add("Transpose", [k], "k_transposed", perm=[0, 1, 3, 2])
    logits = nodes.add("MatMul", [q, k_t], "scores")
    logits = nodes.add("Mul", [logits, nodes.const(scores.scale, "scale", dtype)], "scaled")
    if scores.softcap > 0:
        cap = nodes.const(scores.softcap, "softcap", dtype)
        logits = nodes.add("Mul", [nodes.add("Tanh", [nodes.add("Div", [logits, cap], "softcap_div")], "softcap_tanh"),
                                   cap], "softcapped")
    for k_index, extra in enumerate(scores.additive):
        logits = nodes.add("Add", [logits, extra], f"masked_{k_index}" if k_index else "masked")
    probabilities = nodes.add("Softmax", [logits], "softmax", axis=-1)
    context = nodes.add("MatMul", [probabilities, v], "context")
    merged = nodes.add("Transpose", [context], "merge_heads", perm=[0, 2, 1, 3])
    return nodes.add("Reshape", [merged, nodes.ints([batch, seq, heads * v_size], "output_shape")], "output",
                     outputs=[output])


# ---- masks ------------------------------------------------------------------------------------


def _padding_mask(ctx: NodeContext, nodes: Nodes, i: int, what: str, batch: int, seq: int, total: int,
                  dtype: np.dtype, fill: float) -> str:
    """onnxruntime's mask formats as an additive float mask broadcasting to [B, N, S, T]: raw
    [B, T] or [B, S, T] (0: masked), [B] end positions, [2B] end and start positions."""
    check_int(ctx, i, what)
    shape = ctx.shape(i)
    mask = nodes.input(i)
    zero, filled = nodes.const(0, "mask_zero", dtype), nodes.const(fill, "mask_fill", dtype)
    if shape in ((batch, total), (batch, seq, total)):
        keep = nodes.add("Greater", [mask, nodes.const(0, "mask_zero_int", np.int32)], "mask_keep")
        values = nodes.add("Where", [keep, zero, filled], "mask_values")
        target = [batch, 1, 1, total] if len(shape) == 2 else [batch, 1, seq, total]
        return nodes.add("Reshape", [values, nodes.ints(target, "mask_shape")], "mask")
    if shape in ((batch,), (2 * batch,)):
        positions = nodes.const(np.arange(total, dtype=np.int32).reshape(1, total), "mask_positions")
        if shape == (2 * batch,):
            ends = nodes.add("Slice", [mask, nodes.ints([0], "mask_end_start"), nodes.ints([batch], "mask_end_stop")],
                             "mask_ends")
        else:
            ends = mask
        ends = nodes.add("Reshape", [ends, nodes.ints([batch, 1], "mask_column")], "mask_end_column")
        masked = nodes.add("GreaterOrEqual", [positions, ends], "mask_after_end")
        if shape == (2 * batch,):
            starts = nodes.add("Slice", [mask, nodes.ints([batch], "mask_start_start"),
                                         nodes.ints([2 * batch], "mask_start_stop")], "mask_starts")
            starts = nodes.add("Reshape", [starts, nodes.ints([batch, 1], "mask_start_column")], "mask_start_column")
            before = nodes.add("Less", [positions, starts], "mask_before_start")
            masked = nodes.add("Or", [masked, before], "mask_outside")
        values = nodes.add("Where", [masked, filled, zero], "mask_values")
        return nodes.add("Reshape", [values, nodes.ints([batch, 1, 1, total], "mask_shape")], "mask")
    raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; plugnn takes [B]={[batch]}, [2B]={[2 * batch]}, "
                    f"[B, T]={[batch, total]} or [B, S, T]={[batch, seq, total]} (the CPU kernel's forms)")


def _causal(nodes: Nodes, mask: str | None, seq: int, total: int, past: int, dtype: np.dtype) -> str:
    """Positions after past + s set to the type's lowest value (over `mask` when given)."""
    future = np.arange(total)[None, :] > (past + np.arange(seq))[:, None]
    lowest = nodes.const(np.finfo(dtype).min, "causal_lowest", dtype)
    base = mask if mask is not None else nodes.const(np.zeros((1, 1, 1, total), dtype), "no_mask")
    return nodes.add("Where", [nodes.const(future.reshape(1, 1, seq, total), "causal"), lowest, base], "causal_mask")


def _mask_and_bias(ctx: NodeContext, nodes: Nodes, mask_index: int, bias_index: int, dtype: np.dtype, batch: int,
                   heads: int, seq: int, total: int, past: int, causal: bool) -> list[str]:
    mask = None
    if ctx.has_input(mask_index):
        mask = _padding_mask(ctx, nodes, mask_index, "mask", batch, seq, total, dtype,
                             float(ctx.attr("mask_filter_value", MASK_FILTER)))
    if causal and seq > 1:
        mask = _causal(nodes, mask, seq, total, past, dtype)
    additive = []
    if bias_index >= 0 and ctx.has_input(bias_index):
        check_same(ctx, bias_index, "attention_bias", dtype)
        shape = ctx.shape(bias_index)
        if len(shape) != 4 or shape[2:] != (seq, total) or shape[0] not in (1, batch) or shape[1] not in (1, heads):
            raise ctx.error(f"input {bias_index} (attention_bias) has shape {list(shape)}; it takes "
                            f"[B or 1, N or 1, S, T] = [{batch} or 1, {heads} or 1, {seq}, {total}]")
        additive.append(nodes.input(bias_index) if mask is None else
                        nodes.add("Add", [nodes.input(bias_index), mask], "bias_and_mask"))
    elif mask is not None:
        additive.append(mask)
    return additive


def _scale(ctx: NodeContext, head_size: int) -> float:
    scale = float(ctx.attr("scale", 0.0))
    return scale if scale != 0.0 else 1.0 / math.sqrt(head_size)


# ---- Attention --------------------------------------------------------------------------------


@op("Attention", ("num_heads", "qkv_hidden_sizes", "scale", "unidirectional", "mask_filter_value", "do_rotary",
                  "past_present_share_buffer", "rotary_embedding_dim"), domain=MICROSOFT_DOMAIN)
def attention(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "input", ("float32", "float16"))
    _refuse_inputs(ctx, {6: "past_sequence_length"})
    check_same(ctx, 1, "weights", dtype)
    sizes = qkv_sizes(ctx, attention_shapes(ctx, "weights"))
    projected = nodes.add("MatMul", [nodes.input(0), nodes.input(1)], "qkv")
    if ctx.has_input(2):
        check_same(ctx, 2, "bias", dtype)
        projected = nodes.add("Add", [projected, nodes.input(2)], "qkv_bias")
    return self_attention(ctx, nodes, projected, dtype, sizes, past=4, mask=3, attention_bias=5)


def attention_shapes(ctx: NodeContext, weights_name: str) -> tuple[int, ...]:
    """Checks input [B, S, H] and the 2-D weights and the refused forms; the weights' shape."""
    shape_of(ctx, 0, "input", (3,))
    _positive(ctx, "num_heads")
    _refuse_attrs(ctx, ("do_rotary", "past_present_share_buffer"))
    return shape_of(ctx, 1, weights_name, (2,))


def qkv_sizes(ctx: NodeContext, weights: tuple[int, ...]) -> list[int]:
    heads = _positive(ctx, "num_heads")
    sizes = ctx.ints("qkv_hidden_sizes") or [weights[1] // 3] * 3
    if len(sizes) != 3 or sum(sizes) != weights[1] or sizes[0] != sizes[1] or any(s % heads for s in sizes):
        raise ctx.error(f"the Q, K, V hidden sizes {sizes} must be 3 multiples of num_heads = {heads} adding up to "
                        f"the weights' width {weights[1]}, Q's equal to K's")
    return list(sizes)


def self_attention(ctx: NodeContext, nodes: Nodes, projected: str, dtype: np.dtype, sizes: list[int], *, past: int,
                    mask: int, attention_bias: int) -> Any:
    """Attention's and QAttention's common part: the projected [B, S, Q + K + V] split into heads,
    the past (input `past`) before K and V, output 1 the present, the mask (input `mask`) and
    attention bias (input `attention_bias`; -1: none) added to the scaled scores."""
    batch, seq, _ = ctx.shape(0)
    heads = _positive(ctx, "num_heads")
    head, v_head = sizes[0] // heads, sizes[2] // heads
    q, k, v = nodes.add("Split", [projected, nodes.ints(sizes, "qkv_sizes")], "qkv_split", outputs=3, axis=-1)
    q = _to_heads(nodes, q, batch, seq, heads, head, "q")
    k = _to_heads(nodes, k, batch, seq, heads, head, "k")
    v = _to_heads(nodes, v, batch, seq, heads, v_head, "v")
    past_length = 0
    if ctx.has_input(past):
        check_same(ctx, past, "past", dtype)
        past_shape = ctx.shape(past)
        if len(past_shape) != 5 or past_shape[:3] != (2, batch, heads) or past_shape[4] != head or head != v_head:
            raise ctx.error(f"input {past} (past) has shape {list(past_shape)}; it takes [2, B, N, P, h] = "
                            f"[2, {batch}, {heads}, P, {head}] (with equal Q, K and V hidden sizes)")
        past_length = past_shape[3]
        for index, role in ((0, "k"), (1, "v")):
            earlier = nodes.add("Gather", [nodes.input(past), nodes.const(index, f"past_{role}_index", np.int64)],
                                f"past_{role}", axis=0)
            merged = nodes.add("Concat", [earlier, k if role == "k" else v], f"{role}_with_past", axis=2)
            if role == "k":
                k = merged
            else:
                v = merged
    if nodes.output(1):
        if not ctx.has_input(past):
            raise ctx.error(f"output 1 (present) is used without input {past} (past); onnxruntime pairs them")
        stacked = [nodes.add("Unsqueeze", [t, nodes.ints([0], f"present_{r}_axis")], f"present_{r}")
                   for t, r in ((k, "k"), (v, "v"))]
        nodes.add("Concat", stacked, "present", outputs=[nodes.output(1)], axis=0)
    total = past_length + seq
    additive = _mask_and_bias(ctx, nodes, mask, attention_bias, dtype, batch, heads, seq, total, past_length,
                              bool(ctx.attr("unidirectional", 0)))
    _attend(nodes, q, k, v, _Scores(_scale(ctx, head), additive), dtype, batch, seq, heads, v_head, nodes.output(0))
    return nodes.expansion()


# ---- MultiHeadAttention -----------------------------------------------------------------------


def _bias_slice(nodes: Nodes, bias: str, start: int, stop: int, role: str) -> str:
    return nodes.add("Slice", [bias, nodes.ints([start], f"{role}_bias_start"), nodes.ints([stop], f"{role}_bias_stop")],
                     f"{role}_bias")


def _packed(nodes: Nodes, x: str, shape: tuple[int, ...], count: int, role: str) -> list[str]:
    """[B, L, N, count, h] -> `count` tensors [B, N, L, h]."""
    moved = nodes.add("Transpose", [x], f"{role}_packed_to_heads", perm=[3, 0, 2, 1, 4])  # [count, B, N, L, h]
    return [nodes.add("Gather", [moved, nodes.const(c, f"{role}_index_{c}", np.int64)], f"{role}_{c}", axis=0)
            for c in range(count)]


@op("MultiHeadAttention", ("num_heads", "scale", "unidirectional", "mask_filter_value"), domain=MICROSOFT_DOMAIN)
def multi_head_attention(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    heads = _positive(ctx, "num_heads")
    dtype = check_float(ctx, 0, "query", ("float32", "float16"))
    _refuse_inputs(ctx, {8: "past_sequence_length", 9: "cache_indirection"})
    refuse_outputs(ctx, (3,), "the qk output is not computed by plugnn")
    query = shape_of(ctx, 0, "query", (3, 5))
    batch, seq = query[0], query[1]
    has_bias = ctx.has_input(3)
    if has_bias:
        check_same(ctx, 3, "bias", dtype)
    if len(query) == 5:  # packed QKV [B, S, N, 3, h]
        if query[2:4] != (heads, 3) or ctx.has_input(1) or ctx.has_input(2) or has_bias:
            raise ctx.error(f"input 0 (query) of shape {list(query)} is packed QKV [B, S, N, 3, h] = [{batch}, {seq}, "
                            f"{heads}, 3, h], which takes no key, value or bias")
        head = v_head = query[4]
        q, k, v = _packed(nodes, nodes.input(0), query, 3, "qkv")
        kv_length = seq
    else:
        hidden = query[2]
        if hidden % heads:
            raise ctx.error(f"input 0 (query) has hidden size {hidden}, not a multiple of num_heads = {heads}")
        head = hidden // heads
        q = nodes.input(0)
        if not ctx.has_input(1):
            raise ctx.error("input 1 (key) is absent and query is not packed QKV [B, S, N, 3, h]")
        check_same(ctx, 1, "key", dtype)
        key = shape_of(ctx, 1, "key", (3, 4, 5))
        if has_bias:
            bias_len = ctx.shape(3)
            if len(key) != 3 or len(bias_len) != 1:
                raise ctx.error(f"input 3 (bias) of shape {list(bias_len)} with key of shape {list(key)}: the bias "
                                f"applies to 3-D key and value only (plugnn), as [H + H + H_v]")
            q = nodes.add("Add", [q, _bias_slice(nodes, nodes.input(3), 0, hidden, "q")], "q_bias_add")
        q = _to_heads(nodes, q, batch, seq, heads, head, "q")
        if len(key) == 5:  # packed KV [B, L, N, 2, h]
            if key[2:4] != (heads, 2) or key[4] != head or ctx.has_input(2):
                raise ctx.error(f"input 1 (key) of shape {list(key)} is packed KV [B, L, N, 2, h] = [{batch}, L, "
                                f"{heads}, 2, {head}], which takes no value")
            k, v = _packed(nodes, nodes.input(1), key, 2, "kv")
            kv_length, v_head = key[1], head
        else:
            if not ctx.has_input(2):
                raise ctx.error("input 2 (value) is absent and key is not packed KV [B, L, N, 2, h]")
            check_same(ctx, 2, "value", dtype)
            value = shape_of(ctx, 2, "value", (len(key),))
            if len(key) == 4:  # [B, N, L, h]: already in heads
                if key[:2] != (batch, heads) or key[3] != head or value[:3] != key[:3]:
                    raise ctx.error(f"inputs 1 and 2 (key, value) of shapes {list(key)}, {list(value)} must be "
                                    f"[B, N, L, h] = [{batch}, {heads}, L, {head}] and [{batch}, {heads}, L, h_v]")
                k, v = nodes.input(1), nodes.input(2)
                kv_length, v_head = key[2], value[3]
            else:
                if key[0] != batch or key[2] != hidden or value[:2] != key[:2] or value[2] % heads:
                    raise ctx.error(f"inputs 1 and 2 (key, value) of shapes {list(key)}, {list(value)} must be "
                                    f"[B, L, H] = [{batch}, L, {hidden}] and [{batch}, L, H_v]")
                kv_length, v_head = key[1], value[2] // heads
                k, v = nodes.input(1), nodes.input(2)
                if has_bias:
                    if ctx.shape(3) != (2 * hidden + value[2],):
                        raise ctx.error(f"input 3 (bias) has shape {list(ctx.shape(3))}; it takes "
                                        f"[H + H + H_v] = [{2 * hidden + value[2]}]")
                    k = nodes.add("Add", [k, _bias_slice(nodes, nodes.input(3), hidden, 2 * hidden, "k")], "k_bias_add")
                    v = nodes.add("Add", [v, _bias_slice(nodes, nodes.input(3), 2 * hidden, 2 * hidden + value[2],
                                                         "v")], "v_bias_add")
                k = _to_heads(nodes, k, batch, kv_length, heads, head, "k")
                v = _to_heads(nodes, v, batch, kv_length, heads, v_head, "v")
    past_length = 0
    if ctx.has_input(6) or ctx.has_input(7):
        if not (ctx.has_input(6) and ctx.has_input(7)):
            raise ctx.error("inputs 6 and 7 (past_key, past_value) go together")
        past_k, past_v = shape_of(ctx, 6, "past_key", (4,)), shape_of(ctx, 7, "past_value", (4,))
        check_same(ctx, 6, "past_key", dtype)
        check_same(ctx, 7, "past_value", dtype)
        if past_k[:2] != (batch, heads) or past_k[3] != head or past_v[:3] != past_k[:3] or past_v[3] != v_head:
            raise ctx.error(f"inputs 6 and 7 (past_key, past_value) of shapes {list(past_k)}, {list(past_v)} must be "
                            f"[B, N, P, h] = [{batch}, {heads}, P, {head}] and [{batch}, {heads}, P, {v_head}]")
        past_length = past_k[2]
        k = nodes.add("Concat", [nodes.input(6), k], "k_with_past", axis=2)
        v = nodes.add("Concat", [nodes.input(7), v], "v_with_past", axis=2)
    for index, tensor, role in ((1, k, "present_key"), (2, v, "present_value")):
        if nodes.output(index):
            nodes.add("Identity", [tensor], role, outputs=[nodes.output(index)])
    total = past_length + kv_length
    additive = _mask_and_bias(ctx, nodes, 4, 5, dtype, batch, heads, seq, total, past_length,
                              bool(ctx.attr("unidirectional", 0)))
    _attend(nodes, q, k, v, _Scores(_scale(ctx, head), additive), dtype, batch, seq, heads, v_head, nodes.output(0))
    return nodes.expansion()


# ---- rotary embeddings --------------------------------------------------------------------------


def _rotate(nodes: Nodes, x: str, shape: tuple[int, ...], cos: str, sin: str, rotary: int, interleaved: bool,
            role: str) -> str:
    """x of `shape` [..., head] with its first `rotary` elements rotated by cos and sin
    [..., rotary / 2] (broadcasting over x's leading dims): halves, or interleaved pairs, as
    real and imaginary parts; the rest passes through."""
    head, half = shape[-1], rotary // 2

    def part(of: str, start: int, stop: int, what: str) -> str:
        return nodes.add("Slice", [of, nodes.ints([start], f"{role}_{what}_start"),
                                   nodes.ints([stop], f"{role}_{what}_stop"), nodes.ints([-1], f"{role}_{what}_axis")],
                         f"{role}_{what}")

    def turn(a: str, b: str, c: str, s: str) -> tuple[str, str]:
        """(a c - b s, b c + a s)."""
        real = nodes.add("Sub", [nodes.add("Mul", [a, c], f"{role}_a_cos"), nodes.add("Mul", [b, s], f"{role}_b_sin")],
                         f"{role}_real")
        imaginary = nodes.add("Add", [nodes.add("Mul", [b, c], f"{role}_b_cos"),
                                      nodes.add("Mul", [a, s], f"{role}_a_sin")], f"{role}_imaginary")
        return real, imaginary

    rotated_part = part(x, 0, rotary, "rotary") if rotary < head else x
    if interleaved:
        pairs = nodes.add("Reshape", [rotated_part, nodes.ints(list(shape[:-1]) + [half, 2], f"{role}_pairs_shape")],
                          f"{role}_pairs")
        c = nodes.add("Unsqueeze", [cos, nodes.ints([-1], f"{role}_cos_axis")], f"{role}_cos_pairs")
        s = nodes.add("Unsqueeze", [sin, nodes.ints([-1], f"{role}_sin_axis")], f"{role}_sin_pairs")
        real, imaginary = turn(part(pairs, 0, 1, "even"), part(pairs, 1, 2, "odd"), c, s)
        joined = nodes.add("Concat", [real, imaginary], f"{role}_joined_pairs", axis=-1)
        rotated = nodes.add("Reshape", [joined, nodes.ints(list(shape[:-1]) + [rotary], f"{role}_rotary_shape")],
                            f"{role}_interleaved")
    else:
        real, imaginary = turn(part(rotated_part, 0, half, "first"), part(rotated_part, half, rotary, "second"), cos, sin)
        rotated = nodes.add("Concat", [real, imaginary], f"{role}_halves", axis=-1)
    if rotary == head:
        return rotated
    return nodes.add("Concat", [rotated, part(x, rotary, head, "rest")], f"{role}_rotated", axis=-1)


def _caches(ctx: NodeContext, nodes: Nodes, cos_index: int, dtype: np.dtype) -> tuple[int, int]:
    """(rows, rotary dim) of the cos and sin caches [max_seq, rotary / 2]."""
    cos_shape = shape_of(ctx, cos_index, "cos_cache", (2,))
    if ctx.shape(cos_index + 1) != cos_shape:
        raise ctx.error(f"inputs {cos_index} and {cos_index + 1} (cos_cache, sin_cache) have shapes "
                        f"{list(cos_shape)} and {list(ctx.shape(cos_index + 1))}; they must agree")
    check_same(ctx, cos_index, "cos_cache", dtype)
    check_same(ctx, cos_index + 1, "sin_cache", dtype)
    return cos_shape[0], 2 * cos_shape[1]


def _gathered(nodes: Nodes, cache: str, positions: str, target: list[int], role: str) -> str:
    rows = nodes.add("Gather", [cache, positions], f"{role}_rows", axis=0)
    return nodes.add("Reshape", [rows, nodes.ints(target, f"{role}_shape")], f"{role}_at_positions")


@op("RotaryEmbedding", ("interleaved", "is_packed_batching", "num_heads", "rotary_embedding_dim", "scale"),
    domain=MICROSOFT_DOMAIN)
def rotary_embedding(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    dtype = check_float(ctx, 0, "input", ("float32", "float16", "bfloat16"))
    _refuse_attrs(ctx, ("is_packed_batching",))
    shape = shape_of(ctx, 0, "input", (3, 4))
    check_int(ctx, 1, "position_ids", ("int64",))
    _, cache_rotary = _caches(ctx, nodes, 2, dtype)
    rotary = int(ctx.attr("rotary_embedding_dim", 0)) or cache_rotary
    heads = int(ctx.attr("num_heads", 0))
    if len(shape) == 4:
        batch, heads, seq, head = shape
    else:
        batch, seq, hidden = shape
        head = hidden // heads if heads else cache_rotary
        if head == 0 or hidden % head:
            raise ctx.error(f"input 0 (input) has hidden size {hidden}, not a multiple of the head size {head} "
                            f"(num_heads = {heads}, cos_cache width {cache_rotary // 2})")
        heads = hidden // head
    if rotary != cache_rotary or rotary > head or rotary % 2:
        raise ctx.error(f"the rotary dim {rotary} must be 2 * the caches' width ({cache_rotary}), even and at most "
                        f"the head size {head}")
    positions_shape = ctx.shape(1)
    if positions_shape == (1,):
        positions = nodes.add("Add", [nodes.input(1), nodes.const(np.arange(seq, dtype=np.int64), "steps")], "positions")
        lead = [1, seq]
    elif positions_shape == (batch, seq):
        positions, lead = nodes.input(1), [batch, seq]
    else:
        raise ctx.error(f"input 1 (position_ids) has shape {list(positions_shape)}; it takes [1] (an offset) or "
                        f"[B, S] = [{batch}, {seq}]")
    target = [lead[0], 1, seq, rotary // 2] if len(shape) == 4 else [lead[0], seq, 1, rotary // 2]
    cos = _gathered(nodes, nodes.input(2), positions, target, "cos")
    sin = _gathered(nodes, nodes.input(3), positions, target, "sin")
    if len(shape) == 4:
        nodes.add("Identity", [_rotate(nodes, nodes.input(0), shape, cos, sin, rotary, bool(ctx.attr("interleaved", 0)),
                                       "x")], "output", outputs=[nodes.output(0)])
        return nodes.expansion()
    split = nodes.add("Reshape", [nodes.input(0), nodes.ints([batch, seq, heads, head], "heads_shape")], "split_heads")
    rotated = _rotate(nodes, split, (batch, seq, heads, head), cos, sin, rotary, bool(ctx.attr("interleaved", 0)), "x")
    nodes.add("Reshape", [rotated, nodes.ints(list(shape), "merged_shape")], "merge_heads", outputs=[nodes.output(0)])
    return nodes.expansion()


# ---- GroupQueryAttention ----------------------------------------------------------------------


@op("GroupQueryAttention", ("num_heads", "kv_num_heads", "scale", "softcap", "local_window_size", "do_rotary",
                            "rotary_interleaved", "smooth_softmax", "qk_output"), domain=MICROSOFT_DOMAIN)
def group_query_attention(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    heads, kv_heads = _positive(ctx, "num_heads"), _positive(ctx, "kv_num_heads")
    if heads % kv_heads:
        raise ctx.error(f"num_heads = {heads} is not a multiple of kv_num_heads = {kv_heads}")
    _refuse_attrs(ctx, ("smooth_softmax", "qk_output"))
    _refuse_inputs(ctx, {11: "head_sink"})
    dtype = check_float(ctx, 0, "query", ("float32", "float16"))
    batch, seq, width = shape_of(ctx, 0, "query", (3,))
    packed = not ctx.has_input(1)
    if packed:
        if ctx.has_input(2) or width % (heads + 2 * kv_heads):
            raise ctx.error(f"input 0 (query) of width {width} without key is packed QKV, of width "
                            f"(num_heads + 2 kv_num_heads) * head_size; value must be absent too")
        head = width // (heads + 2 * kv_heads)
        q, k, v = nodes.add("Split", [nodes.input(0), nodes.ints([heads * head, kv_heads * head, kv_heads * head],
                                                                 "qkv_sizes")], "qkv_split", outputs=3, axis=-1)
    else:
        if width % heads or not ctx.has_input(2):
            raise ctx.error(f"input 0 (query) has width {width}, not a multiple of num_heads = {heads}, or input 2 "
                            f"(value) is absent")
        head = width // heads
        for i, what in ((1, "key"), (2, "value")):
            check_same(ctx, i, what, dtype)
            if ctx.shape(i) != (batch, seq, kv_heads * head):
                raise ctx.error(f"input {i} ({what}) has shape {list(ctx.shape(i))}; it takes [B, S, kv_num_heads * "
                                f"head_size] = [{batch}, {seq}, {kv_heads * head}]")
        q, k, v = nodes.input(0), nodes.input(1), nodes.input(2)
    q = _to_heads(nodes, q, batch, seq, heads, head, "q")
    k = _to_heads(nodes, k, batch, seq, kv_heads, head, "k")
    v = _to_heads(nodes, v, batch, seq, kv_heads, head, "v")
    past = 0
    if ctx.has_input(3) or ctx.has_input(4):
        if not (ctx.has_input(3) and ctx.has_input(4)):
            raise ctx.error("inputs 3 and 4 (past_key, past_value) go together")
        for i, what in ((3, "past_key"), (4, "past_value")):
            check_same(ctx, i, what, dtype)
            shape = shape_of(ctx, i, what, (4,))
            if shape[:2] != (batch, kv_heads) or shape[3] != head or shape != ctx.shape(3):
                raise ctx.error(f"input {i} ({what}) has shape {list(shape)}; it takes [B, kv_num_heads, P, "
                                f"head_size] = [{batch}, {kv_heads}, P, {head}] (BNSH, as past_key)")
        past = ctx.shape(3)[2]
    check_int(ctx, 5, "seqlens_k")
    if ctx.shape(5) != (batch,):
        raise ctx.error(f"input 5 (seqlens_k) has shape {list(ctx.shape(5))}; it takes [B] = [{batch}]")
    total_value = np.asarray(ctx.const(6, "total_sequence_length"))
    if total_value.size != 1:
        raise ctx.error(f"input 6 (total_sequence_length) has {total_value.size} elements; it takes one")
    total = int(total_value.reshape(-1)[0])
    present = max(total, past)
    subsequent = seq > 1 and seq != total
    if subsequent and batch != 1:
        raise ctx.error(f"sequence length {seq} with total_sequence_length {total}: onnxruntime takes batch 1 then")
    first_prompt = not subsequent and seq == total
    if not first_prompt and not subsequent and seq != 1:
        raise ctx.error(f"sequence length {seq} with total_sequence_length {total}: after the prompt it must be 1")
    # each batch's past length: 0 for the first prompt, else seqlens_k + 1 - S (run time)
    if first_prompt:
        past_b = nodes.const(np.zeros((batch, 1), np.int64), "past_lengths")
    else:
        lengths = nodes.add("Cast", [nodes.input(5)], "seqlens", to=7)  # int64
        past_b = nodes.add("Reshape", [nodes.add("Sub", [lengths, nodes.const(seq - 1, "seq_minus_one", np.int64)],
                                                 "past_length"), nodes.ints([batch, 1], "past_column")], "past_lengths")
    if int(ctx.attr("do_rotary", 0)):
        if not (ctx.has_input(7) and ctx.has_input(8)):
            raise ctx.error("do_rotary = 1 needs inputs 7 and 8 (cos_cache, sin_cache)")
        _, rotary = _caches(ctx, nodes, 7, dtype)
        steps = nodes.const(np.arange(seq, dtype=np.int64).reshape(1, seq), "steps")
        if ctx.has_input(9) and not first_prompt:
            check_int(ctx, 9, "position_ids", ("int64",))
            positions = nodes.input(9)
        elif ctx.has_input(9):  # the first prompt: only the first element, an offset
            check_int(ctx, 9, "position_ids", ("int64",))
            flat = nodes.add("Reshape", [nodes.input(9), nodes.ints([-1], "flat")], "position_ids_flat")
            first = nodes.add("Slice", [flat, nodes.ints([0], "first_start"), nodes.ints([1], "first_stop")],
                              "position_offset")
            positions = nodes.add("Add", [nodes.add("Reshape", [first, nodes.ints([1, 1], "offset_shape")],
                                                    "position_offset_2d"), steps], "positions")
        else:
            positions = nodes.add("Add", [past_b, steps], "positions")  # [B, S]
        cos = _gathered(nodes, nodes.input(7), positions, [batch, 1, seq, rotary // 2], "cos")
        sin = _gathered(nodes, nodes.input(8), positions, [batch, 1, seq, rotary // 2], "sin")
        interleaved = bool(ctx.attr("rotary_interleaved", 0))
        q = _rotate(nodes, q, (batch, heads, seq, head), cos, sin, rotary, interleaved, "q")
        k = _rotate(nodes, k, (batch, kv_heads, seq, head), cos, sin, rotary, interleaved, "k")
    # present[b, :, t] = past[b, :, t] for t < past_b, new[b, :, t - past_b] for t < past_b + S, else 0
    slots = nodes.const(np.arange(present, dtype=np.int64).reshape(1, present), "slots")
    offset = nodes.add("Sub", [slots, past_b], "slot_offsets")  # [B, T]
    in_past = nodes.add("Less", [offset, nodes.const(0, "zero", np.int64)], "in_past")
    in_new = nodes.add("And", [nodes.add("Not", [in_past], "not_in_past"),
                               nodes.add("Less", [offset, nodes.const(seq, "seq", np.int64)], "before_end")], "in_new")
    index = nodes.add("Clip", [offset, nodes.const(0, "index_low", np.int64), nodes.const(seq - 1, "index_high", np.int64)],
                      "new_index")
    index = nodes.add("Reshape", [index, nodes.ints([batch, 1, present, 1], "index_shape")], "new_index_4d")
    index = nodes.add("Expand", [index, nodes.ints([batch, kv_heads, present, head], "index_full")], "new_index_full")
    where_past = nodes.add("Reshape", [in_past, nodes.ints([batch, 1, present, 1], "in_past_shape")], "in_past_4d")
    where_new = nodes.add("Reshape", [in_new, nodes.ints([batch, 1, present, 1], "in_new_shape")], "in_new_4d")
    zero = nodes.const(0, "zero_value", dtype)
    caches = []
    for tensor, i, role in ((k, 3, "key"), (v, 4, "value")):
        placed = nodes.add("GatherElements", [tensor, index], f"{role}_placed", axis=2)
        placed = nodes.add("Where", [where_new, placed, zero], f"{role}_new")
        if past:
            earlier = nodes.input(i)
            if present > past:
                earlier = nodes.add("Pad", [earlier, nodes.ints([0, 0, 0, 0, 0, 0, present - past, 0], f"{role}_pads")],
                                    f"{role}_past_padded")
            placed = nodes.add("Where", [where_past, earlier, placed], f"{role}_present")
        caches.append(nodes.add("Identity", [placed], f"present_{role}", outputs=[nodes.output(1 if i == 3 else 2)]))
    # query s of batch b sees slots [start, past_b + s]
    factor = heads // kv_heads
    keys = _repeat_heads(nodes, caches[0], batch, kv_heads, factor, present, head, "k_repeat")
    values = _repeat_heads(nodes, caches[1], batch, kv_heads, factor, present, head, "v_repeat")
    last = nodes.add("Add", [past_b, nodes.const(np.arange(seq, dtype=np.int64).reshape(1, seq), "query_steps")],
                     "last_visible")  # [B, S]
    last = nodes.add("Reshape", [last, nodes.ints([batch, 1, seq, 1], "last_shape")], "last_visible_4d")
    slot_row = nodes.const(np.arange(present, dtype=np.int64).reshape(1, 1, 1, present), "slot_row")
    hidden = nodes.add("Greater", [slot_row, last], "future")
    window = int(ctx.attr("local_window_size", -1))
    if window >= 0:
        # the window holds `local_window_size` keys, the query's own included (onnxruntime's CPU kernel)
        first = nodes.add("Sub", [last, nodes.const(window - 1, "window", np.int64)], "first_visible")
        hidden = nodes.add("Or", [hidden, nodes.add("Less", [slot_row, first], "before_window")], "hidden")
    lowest = nodes.const(np.finfo(dtype).min, "lowest", dtype)
    mask = nodes.add("Where", [hidden, lowest, nodes.const(0, "visible", dtype)], "mask")
    additive = []
    if ctx.has_input(10):
        check_same(ctx, 10, "attention_bias", dtype)
        bias_shape = ctx.shape(10)
        if len(bias_shape) != 4 or bias_shape[2] != seq or bias_shape[3] > present or bias_shape[0] not in (1, batch) \
                or bias_shape[1] not in (1, heads):
            raise ctx.error(f"input 10 (attention_bias) has shape {list(bias_shape)}; it takes [B or 1, N or 1, S, T]")
        bias = nodes.input(10)
        if bias_shape[3] < present:
            bias = nodes.add("Pad", [bias, nodes.ints([0, 0, 0, 0, 0, 0, 0, present - bias_shape[3]], "bias_pads")],
                             "bias_padded")
        additive.append(bias)
    additive.append(mask)
    scores = _Scores(_scale(ctx, head), additive, float(ctx.attr("softcap", 0.0)))
    _attend(nodes, q, keys, values, scores, dtype, batch, seq, heads, head, nodes.output(0))
    return nodes.expansion()
