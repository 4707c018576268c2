"""onnxruntime's normalizations (its ContribOperators document's semantics), imported as ONNX nodes
(contrib_nodes.py): SkipLayerNormalization, SkipSimplifiedLayerNormalization and
EmbedLayerNormalization of com.microsoft, and SimplifiedLayerNormalization, which onnxruntime adds
to the default domain (onnxruntime's LayerNormalization of the default domain below opset 17 is
ONNX's LayerNormalization converter, ops_normalization.py, with unknown attributes ignored).

- SkipLayerNormalization(input, skip, gamma[, beta][, bias]; epsilon 1e-12): s = input + skip
  (+ bias), ONNX LayerNormalization of s over the last axis; output 3 is s. Outputs 1 and 2
  (training statistics) are not computed.
- SkipSimplifiedLayerNormalization(input, skip, gamma[, bias]; epsilon 1e-12): the same with
  RMSNormalization (no centring, no beta).
- SimplifiedLayerNormalization(X, scale; axis -1, epsilon 1e-5, stash_type 1): ONNX
  RMSNormalization; output 1 (inv_std_var) is not computed.
- EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
  segment_embedding?, gamma, beta, mask?, position_ids?; epsilon 1e-12): the embeddings gathered
  (positions 0..S-1 without position_ids) and added, LayerNormalization; output 1 (mask_index,
  int32 [B]) counts each row's mask entries equal to 1 (0 without a mask), output 2 is the sum of
  the embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.contrib_nodes import Nodes, check_float, check_int, check_same, refuse_outputs, shape_of
from plugnn.onnx.registry import MICROSOFT_DOMAIN, ORT_DEFAULT_DOMAIN, op

SKIP_EPSILON = 1e-12  # onnxruntime's kDefaultSkipLayerNormEpsilon and kDefaultEmbedLayerNormEpsilon
TRAINING_OUTPUTS = "the training statistics (mean, inv_std_var) are not computed by plugnn"


def _skip_sum(ctx: NodeContext, nodes: Nodes, bias_index: int, sum_output: int) -> str:
    dtype = check_float(ctx, 0, "input", ("float32", "float16", "bfloat16"))
    shape_of(ctx, 0, "input", (2, 3))
    check_same(ctx, 1, "skip", dtype)
    refuse_outputs(ctx, (1, 2), TRAINING_OUTPUTS)
    last = nodes.output(sum_output) if not ctx.has_input(bias_index) else None
    total = nodes.add("Add", [nodes.input(0), nodes.input(1)], "skip_add", outputs=[last])
    if ctx.has_input(bias_index):
        check_same(ctx, bias_index, "bias", dtype)
        total = nodes.add("Add", [total, nodes.input(bias_index)], "bias_add", outputs=[nodes.output(sum_output)])
    return total


@op("SkipLayerNormalization", ("epsilon",), domain=MICROSOFT_DOMAIN,
    outputs_note="outputs 1 and 2 (mean, inv_std_var) are not computed")
def skip_layer_normalization(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    total = _skip_sum(ctx, nodes, 4, 3)
    inputs = [total, nodes.input(2)] + ([nodes.input(3)] if ctx.has_input(3) else [])
    nodes.add("LayerNormalization", inputs, "layer_norm", outputs=[nodes.output(0)], axis=-1,
              epsilon=float(ctx.attr("epsilon", SKIP_EPSILON)))
    return nodes.expansion()


@op("SkipSimplifiedLayerNormalization", ("epsilon",), domain=MICROSOFT_DOMAIN,
    outputs_note="outputs 1 and 2 (mean, inv_std_var) are not computed")
def skip_simplified_layer_normalization(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    total = _skip_sum(ctx, nodes, 3, 3)
    nodes.add("RMSNormalization", [total, nodes.input(2)], "rms_norm", outputs=[nodes.output(0)], axis=-1,
              epsilon=float(ctx.attr("epsilon", SKIP_EPSILON)))
    return nodes.expansion()


@op("SimplifiedLayerNormalization", ("axis", "epsilon", "stash_type"), domain=ORT_DEFAULT_DOMAIN,
    outputs_note="output 1 (inv_std_var) is not computed", unchecked_attributes_below=1 << 30)
def simplified_layer_normalization(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    check_float(ctx, 0, "X")
    refuse_outputs(ctx, (1,), "the training statistic inv_std_var is not computed by plugnn")
    nodes.add("RMSNormalization", [nodes.input(0), nodes.input(1)], "rms_norm", outputs=[nodes.output(0)],
              axis=int(ctx.attr("axis", -1)), epsilon=float(ctx.attr("epsilon", 1e-5)),
              stash_type=int(ctx.attr("stash_type", 1)))
    return nodes.expansion()


@op("EmbedLayerNormalization", ("epsilon", "mask_index_type"), domain=MICROSOFT_DOMAIN)
def embed_layer_normalization(ctx: NodeContext) -> Any:
    nodes = Nodes(ctx)
    ids_shape = shape_of(ctx, 0, "input_ids", (2,))
    check_int(ctx, 0, "input_ids")
    dtype = check_float(ctx, 2, "word_embedding", ("float32", "float16"))
    for i, what in ((3, "position_embedding"), (5, "gamma"), (6, "beta")):
        check_same(ctx, i, what, dtype)
    words = nodes.add("Gather", [nodes.input(2), nodes.input(0)], "word_gather")
    if ctx.has_input(8):
        check_int(ctx, 8, "position_ids")
        positions = nodes.input(8)
    else:
        positions = nodes.const(np.arange(ids_shape[1], dtype=np.int32), "positions")
    total = nodes.add("Add", [words, nodes.add("Gather", [nodes.input(3), positions], "position_gather")],
                      "position_add", outputs=[None if ctx.has_input(1) else nodes.output(2)])
    if ctx.has_input(1):
        if not ctx.has_input(4):
            raise ctx.error("input 1 (segment_ids) is given and input 4 (segment_embedding) is not")
        check_int(ctx, 1, "segment_ids")
        check_same(ctx, 4, "segment_embedding", dtype)
        segments = nodes.add("Gather", [nodes.input(4), nodes.input(1)], "segment_gather")
        total = nodes.add("Add", [total, segments], "segment_add", outputs=[nodes.output(2)])
    nodes.add("LayerNormalization", [total, nodes.input(5), nodes.input(6)], "layer_norm",
              outputs=[nodes.output(0)], axis=-1, epsilon=float(ctx.attr("epsilon", SKIP_EPSILON)))
    if nodes.output(1):
        if ctx.has_input(7):
            check_int(ctx, 7, "mask")
            ones = nodes.add("Equal", [nodes.input(7), nodes.const(1, "one", np.int32)], "mask_is_one")
            counted = nodes.add("Cast", [ones], "mask_as_int", to=6)  # int32
            nodes.add("ReduceSum", [counted, nodes.ints([1], "axis")], "mask_index", outputs=[nodes.output(1)],
                      keepdims=0)
        else:
            nodes.add("Identity", [nodes.const(np.zeros(ids_shape[0], np.int32), "no_mask")], "mask_index",
                      outputs=[nodes.output(1)])
    return nodes.expansion()
