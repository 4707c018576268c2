"""Backend-independent passes: fold batch normalization, and per-channel constant scales and
shifts, into the convolution or fully connected layer before them, and compute once, at
optimization, every layer whose inputs are all constants."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn import descriptors as d
from plugnn.backend import Backend
from plugnn.graph import Graph, Node
from plugnn.shapes import DATA_DEPENDENT_KINDS
from plugnn.symbolic import symbolic_descriptor


def fold_batch_norms(graph: Graph) -> None:
    """y = BN(conv(x)) or BN(fc(x)) with constant parameters becomes one layer with new weights."""
    for bn in [n for n in graph.nodes if n.kind is d.LayerKind.BATCH_NORMALIZATION]:
        producer = graph.producer(bn.inputs[0])
        if producer is None or producer.kind not in (d.LayerKind.CONVOLUTION_2D, d.LayerKind.FULLY_CONNECTED):
            continue
        params = [graph.constants.get(k) for k in bn.inputs[1:]]
        weights = [graph.constants.get(k) for k in producer.inputs[1:]]
        if any(p is None for p in params) or any(w is None for w in weights):
            continue
        if len(graph.consumers(bn.inputs[0])) != 1 or graph.is_graph_output(bn.inputs[0]):
            continue
        if producer.kind is d.LayerKind.CONVOLUTION_2D:
            desc: Any = producer.descriptor
            if desc.layout != bn.descriptor.layout or desc.fused_activation or desc.has_addend:  # type: ignore[union-attr]
                continue
            folded = _fold_into_conv(graph, producer, bn, params, weights)
        else:
            folded = _fold_into_fc(graph, producer, bn, params, weights)
        if folded:
            producer.outputs = bn.outputs
            producer.replaces += (bn.name,)
            producer.note = (producer.note + "; " if producer.note else "") + f"batch normalization {bn.name!r} folded in"
            graph.nodes.remove(bn)
            graph.removed.append((bn.name, f"folded into {producer.name!r}"))


def _bn_scale_shift(bn: Node, params: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    scale, bias, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + float(bn.descriptor.epsilon))  # type: ignore[union-attr]
    return s, bias - mean * s


def _fold_into_conv(graph: Graph, conv: Node, bn: Node, params: list[np.ndarray], weights: list[np.ndarray]) -> bool:
    s, shift = _bn_scale_shift(bn, params)
    w = weights[0].astype(np.float64) * s[:, None, None, None]
    b = (weights[1].astype(np.float64) if len(weights) > 1 else 0.0) * s + shift
    w_key = graph.add_constant(f"{conv.name}/folded_weights", w.astype(np.float32))
    b_key = graph.add_constant(f"{conv.name}/folded_bias", b.astype(np.float32))
    conv.inputs = [conv.inputs[0], w_key, b_key]
    desc: d.Convolution2dDescriptor = conv.descriptor  # type: ignore[assignment]
    conv.descriptor = d.Convolution2dDescriptor(desc.stride, desc.padding, desc.dilation, desc.groups, desc.layout,
                                                has_bias=True)
    return True


def _fold_into_fc(graph: Graph, fc: Node, bn: Node, params: list[np.ndarray], weights: list[np.ndarray]) -> bool:
    desc: d.FullyConnectedDescriptor = fc.descriptor  # type: ignore[assignment]
    if desc.fused_activation is not None or graph.infos[fc.outputs[0]].rank != 2:
        return False
    s, shift = _bn_scale_shift(bn, params)
    b = weights[0].astype(np.float64)
    b = b * s[:, None] if desc.transpose_b else b * s[None, :]
    c = (desc.beta * weights[1].astype(np.float64) if desc.has_bias else 0.0) * s + shift
    b_key = graph.add_constant(f"{fc.name}/folded_b", b.astype(np.float32))
    c_key = graph.add_constant(f"{fc.name}/folded_c", np.asarray(c, np.float32))
    fc.inputs = [fc.inputs[0], b_key, c_key]
    fc.descriptor = d.FullyConnectedDescriptor(desc.transpose_a, desc.transpose_b, desc.alpha, 1.0, True)
    return True


def fold_channel_affine(graph: Graph) -> None:
    """y = conv(x) * s + t, with s and t constants per output channel (shape [C, 1, 1] or
    [1, C, 1, 1], or one value), becomes one convolution with new weights and bias: how
    torchvision's frozen batch norms (detection backbones) and exported scale layers arrive.
    Each MUL, ADD or SUB (constant subtrahend) is folded while the convolution's output has no
    other reader, is no graph output, and the layer between has no fused activation."""
    for conv in [n for n in graph.nodes if n.kind is d.LayerKind.CONVOLUTION_2D]:
        while _fold_next_affine(graph, conv):
            pass


def _channel_constant(graph: Graph, key: str, channels: int) -> np.ndarray | None:
    """The constant `key` as one value per output channel ([C] in float64), or None when it is not
    a constant or varies along another axis than the channel axis of an NCHW tensor."""
    value = graph.constants.get(key)
    if value is None or value.dtype.kind != "f":
        return None
    shape = value.shape
    while len(shape) > 3 and shape[0] == 1:
        shape = shape[1:]
    if value.size == 1:
        return np.full(channels, float(value.reshape(-1)[0]))
    if shape != (channels, 1, 1):
        return None
    return value.astype(np.float64).reshape(channels)


def _fold_next_affine(graph: Graph, conv: Node) -> bool:
    desc: d.Convolution2dDescriptor = conv.descriptor  # type: ignore[assignment]
    out = conv.outputs[0]
    if desc.layout is not d.DataLayout.NCHW or desc.fused_activation or desc.has_addend:
        return False
    weights = [graph.constants.get(k) for k in conv.inputs[1:]]
    if any(w is None for w in weights) or graph.is_graph_output(out) or len(graph.consumers(out)) != 1:
        return False
    (op,) = graph.consumers(out)
    if op.kind is not d.LayerKind.ELEMENTWISE_BINARY or op.descriptor.fused_activation is not None:  # type: ignore[union-attr]
        return False
    kind = op.descriptor.op  # type: ignore[union-attr]
    if kind not in (d.BinaryOp.MUL, d.BinaryOp.ADD, d.BinaryOp.SUB) or op.inputs.count(out) != 1:
        return False
    slot = 1 - op.inputs.index(out)
    if kind is d.BinaryOp.SUB and slot != 1:
        return False  # t - conv(x) negates the convolution: left as it is
    if graph.infos[op.outputs[0]].shape != graph.infos[out].shape:
        return False  # the constant broadcasts the convolution's output to a larger shape
    channels = graph.infos[out].shape[1]
    value = _channel_constant(graph, op.inputs[slot], channels)
    if value is None:
        return False
    w = weights[0].astype(np.float64)
    b = weights[1].astype(np.float64) if len(weights) > 1 else np.zeros(channels)
    if kind is d.BinaryOp.MUL:
        w, b = w * value[:, None, None, None], b * value
    else:
        b = b + value if kind is d.BinaryOp.ADD else b - value
    w_key = graph.add_constant(f"{conv.name}/folded_weights", w.astype(weights[0].dtype))
    b_key = graph.add_constant(f"{conv.name}/folded_bias", b.astype(weights[0].dtype))
    conv.inputs = [conv.inputs[0], w_key, b_key]
    conv.descriptor = d.Convolution2dDescriptor(desc.stride, desc.padding, desc.dilation, desc.groups, desc.layout,
                                                has_bias=True)
    conv.outputs = op.outputs
    conv.replaces += (op.name,)
    conv.note = (conv.note + "; " if conv.note else "") + f"per-channel {kind.name.lower()} {op.name!r} folded in"
    graph.nodes.remove(op)
    graph.removed.append((op.name, f"folded into {conv.name!r}"))
    return True


def fold_constants(graph: Graph, backends: Sequence[Backend]) -> None:
    """Compute, once, every layer whose inputs are all constants, on the first preferred backend
    that supports it; its output becomes a constant."""
    for node in list(graph.nodes):
        if not node.inputs or any(k not in graph.constants for k in node.inputs):
            continue
        if node.kind in DATA_DEPENDENT_KINDS:
            continue  # its outputs' shapes are known when it runs (the importer folds these itself)
        if any(graph.infos[k].symbolic for k in node.outputs) or symbolic_descriptor(node.descriptor):
            continue  # shapes or parameters that follow the symbols (plugnn.symbolic): computed per run
        if node.kind is d.LayerKind.RANDOM and getattr(node.descriptor, "advance", False):
            continue  # new values on every run (PN_RANDOM_ADVANCE): never a constant
        spec = graph.spec(node)
        backend = next((b for b in backends if b.is_layer_supported(spec)), None)
        if backend is None:
            continue  # assignment reports it with every backend's reason
        outputs = [np.empty(graph.infos[k].shape, graph.infos[k].dtype.numpy_dtype) for k in node.outputs]
        factory = backend.create_workload_factory()
        try:
            workload = factory.create_workload(spec)
            workspace = np.empty(workload.workspace_bytes, np.uint8) if workload.workspace_bytes else None
            workload.execute([graph.constants[k] for k in node.inputs], outputs, workspace)
            workload.close()
        finally:
            factory.close()
        for key, value in zip(node.outputs, outputs):
            value.setflags(write=False)
            graph.constants[key] = value
        graph.nodes.remove(node)
        graph.removed.append((node.name, f"constant-folded on {backend.backend_id}"))
