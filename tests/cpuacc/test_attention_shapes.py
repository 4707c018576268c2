"""CpuAcc's fused attention at dims other than the ones it was fused at (ops/attention.c: its payload
keeps the recipe of each operand, a Transpose's permutation or a Reshape's grouping of axes, and works out
the operands' strides, the batch, the mask's broadcast and the output's layout again): one
network with a symbolic KV length or batch re-sizes its fused attention without fusing it again,
giving the bits a network fused at those dims gives: the fused layer takes the new dims at
execute (ABI 1.3). An operand read through a Reshape (the heads' split, grouped-query attention's
merge) follows its input by the Reshape's grouping of axes, which the runtime checks at the new
shapes: where the Reshape groups axes otherwise, the layers are fused again.

Oracle: a session built for the one shape (fused at its dims) must give the same bits; both
against NumPy in float64 within 1e-5 * sqrt(depth)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.descriptors import LayerKind

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

HEADS, DEPTH = 2, 16
SCALE = np.float32(1 / np.sqrt(DEPTH))


def kv_model() -> bytes:
    """q [B, H, S, D], k and v [B, L, H, D] (a cache laid out as some exporters keep it), mask
    [B, 1, 1, L]: softmax(q @ k^T * scale + mask) @ v, transposed back to [B, S, H, D]; B, S and
    L symbolic."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),     # [B, H, D, L]
             helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]),     # [B, H, L, D]
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Add", ["ss", "mask"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "vt"], ["o"]),
             helper.make_node("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3])]
    graph = helper.make_graph(
        nodes, "kv_attention",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["B", HEADS, "S", DEPTH]),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, ["B", "L", HEADS, DEPTH]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, ["B", "L", HEADS, DEPTH]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", 1, 1, "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", HEADS, DEPTH])],
        [numpy_helper.from_array(np.asarray(SCALE), "scale")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def feed(b: int, s: int, length: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1000 * b + 100 * s + length)
    mask = np.where(rng.random((b, 1, 1, length)) < 0.2, np.float32(-1e4), np.float32(0))
    return {"q": rng.standard_normal((b, HEADS, s, DEPTH)).astype(np.float32),
            "k": rng.standard_normal((b, length, HEADS, DEPTH)).astype(np.float32),
            "v": rng.standard_normal((b, length, HEADS, DEPTH)).astype(np.float32),
            "mask": mask.astype(np.float32)}


def numpy_attention(f: dict[str, np.ndarray]) -> np.ndarray:
    q, k, v, m = (f[n].astype(np.float64) for n in ("q", "k", "v", "mask"))
    s = q @ k.transpose(0, 2, 3, 1) * float(SCALE) + m
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)


def fused(session: plugnn.InferenceSession, shapes: dict[str, tuple[int, ...]]) -> Any:
    loaded = session.loaded_for(shapes)
    assert loaded is not None
    layers = [n for n in loaded.optimized.layers if n.kind is LayerKind.PRECOMPILED]
    assert len(layers) == 1 and "attention" in layers[0].descriptor.label
    return loaded


def test_one_network_re_sizes_its_fused_attention_to_every_kv_length_and_batch() -> None:
    model = kv_model()
    shapes = [(1, 1, 5), (1, 1, 6), (1, 1, 7), (1, 1, 40), (2, 1, 40), (2, 3, 41), (1, 1, 300), (3, 2, 9)]
    with plugnn.InferenceSession(model, backends=["CpuAcc"]) as session:
        for b, s, length in shapes:
            f = feed(b, s, length)
            got, = session.run(None, f)
            loaded = fused(session, {n: a.shape for n, a in f.items()})
            assert loaded.refused_layers == []  # never fused again: it takes the new dims at execute
            if (b, s, length) != shapes[0]:
                assert [n.name for n in loaded.optimized.layers if n.kind is LayerKind.PRECOMPILED] == \
                    loaded.rebound_layers
            with plugnn.InferenceSession(model, backends=["CpuAcc"]) as alone:  # fused at these dims
                want, = alone.run(None, f)
            np.testing.assert_array_equal(got, want, err_msg=f"batch {b}, queries {s}, keys {length}")
            expected = numpy_attention(f)
            assert np.abs(got - expected).max() <= 1e-5 * np.sqrt(max(DEPTH, length)) * max(1.0, np.abs(expected).max())
        assert session.networks_built == 1
        assert session.networks()[0]["instances_resized"] >= len(shapes) - 1


def reshaped_q_model(target: str = "length") -> bytes:
    """q [B, S, H * D] split into heads by a Reshape (its shape from the input's, as exported:
    [B, S, H, D]; or, with target "heads_first", [B, H, S, D], a legal Reshape that is not a split of
    one axis), k^T [B, H, D, L], v [B, H, L, D]: the fused attention reads q through the Reshape."""
    shape_of_q = [helper.make_node("Shape", ["q"], ["b"], start=0, end=1),
                  helper.make_node("Shape", ["q"], ["s"], start=1, end=2)]
    parts = ["b", "s", "heads", "depth"] if target == "length" else ["b", "heads", "s", "depth"]
    nodes = [*shape_of_q,
             helper.make_node("Concat", parts, ["target"], axis=0),
             helper.make_node("Reshape", ["q", "target"], ["qh"]),
             helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3] if target == "length" else [0, 1, 2, 3]),
             helper.make_node("MatMul", ["qt", "kt"], ["s_"]),
             helper.make_node("Softmax", ["s_"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    graph = helper.make_graph(
        nodes, "reshaped_q",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["B", "S", HEADS * DEPTH]),
         helper.make_tensor_value_info("kt", TensorProto.FLOAT, ["B", HEADS, DEPTH, "L"]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, ["B", HEADS, "L", DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", HEADS, "S", DEPTH])],
        [numpy_helper.from_array(np.asarray([HEADS], np.int64), "heads"),
         numpy_helper.from_array(np.asarray([DEPTH], np.int64), "depth")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def reshaped_q_inputs(rng: np.random.Generator, b: int, s: int, length: int) -> dict[str, np.ndarray]:
    return {"q": rng.standard_normal((b, s, HEADS * DEPTH)).astype(np.float32),
            "kt": rng.standard_normal((b, HEADS, DEPTH, length)).astype(np.float32),
            "v": rng.standard_normal((b, HEADS, length, DEPTH)).astype(np.float32)}


def numpy_reshaped_q(f: dict[str, np.ndarray], target: str) -> np.ndarray:
    b, s, _ = f["q"].shape
    q = f["q"].astype(np.float64)
    q = q.reshape(b, s, HEADS, DEPTH).transpose(0, 2, 1, 3) if target == "length" else q.reshape(b, HEADS, s, DEPTH)
    scores = q @ f["kt"].astype(np.float64)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ f["v"].astype(np.float64)


def check_steps(target: str, steps: list[tuple[tuple[int, int, int], bool | None]]) -> None:
    """Runs the reshaped-q model through `steps` ((b, s, length), whether the fused attention is
    fused again there: None for the first), each against a session fused at those dims (the
    same bits) and NumPy."""
    model = reshaped_q_model(target)
    rng = np.random.default_rng(4)
    with plugnn.InferenceSession(model, backends=["CpuAcc"]) as session:
        workspace = None
        for (b, s, length), refit in steps:
            f = reshaped_q_inputs(rng, b, s, length)
            got, = session.run(None, f)
            loaded = fused(session, {n: a.shape for n, a in f.items()})
            if refit is not None:
                assert bool(loaded.refused_layers) is refit, (b, s, length, loaded.refused_layers)
                assert bool(loaded.rebound_layers) is not refit, (b, s, length, loaded.rebound_layers)
            if refit and length == 300:  # fused again over many more keys: a larger workspace, bound in place
                assert loaded._workspace is not workspace and loaded._workspace.nbytes > workspace.nbytes  # noqa: SLF001
            workspace = loaded._workspace  # noqa: SLF001
            with plugnn.InferenceSession(model, backends=["CpuAcc"]) as alone:
                want, = alone.run(None, f)
            np.testing.assert_array_equal(got, want, err_msg=f"batch {b}, queries {s}, keys {length}")
            expected = numpy_reshaped_q(f, target)
            assert np.abs(got - expected).max() <= 1e-5 * np.sqrt(max(DEPTH, length)) * max(1.0, np.abs(expected).max())
        assert session.networks_built == 1


def test_an_operand_behind_the_heads_split_follows_its_input_at_every_length_and_batch() -> None:
    """q's Reshape splits its last axis into heads: the payload derives the Reshape's output at
    other lengths and batches (the grouping of axes), so the attention takes them at execute."""
    check_steps("length", [((1, 4, 8), None), ((1, 4, 9), False), ((1, 6, 9), False), ((2, 6, 30), False),
                           ((2, 7, 300), False), ((1, 1, 5), False)])


def test_a_reshape_that_does_not_group_axes_as_it_did_is_fused_again() -> None:
    """q [1, 2, 32] reshaped to [1, H=2, S=2, 16] reads, at the fused dims, like a split of q's last
    axis; at S = 3 the Reshape gives [1, 2, 3, 16], not what that grouping gives ([1, 3, 2, 16]):
    the runtime sees it (the absorbed Reshape's shapes) and fuses the layers again, right."""
    check_steps("heads_first", [((1, 2, 8), None), ((1, 2, 9), False), ((1, 3, 9), True), ((1, 3, 12), False),
                                ((1, 4, 300), True)])


def gqa_model() -> bytes:
    """Grouped-query attention as transformers exports it: k and v [B, KVH, L, D] repeated to the
    query heads by Unsqueeze, Expand [B, KVH, REP, L, D] and a Reshape merging KVH and REP; q
    [B, H, S, D]; B, S and L symbolic."""
    nodes = [helper.make_node("Shape", ["k"], ["kshape"]),
             helper.make_node("Gather", ["kshape", "i0"], ["b"], axis=0),
             helper.make_node("Gather", ["kshape", "i2"], ["l"], axis=0),
             helper.make_node("Concat", ["b", "kvh", "rep", "l", "depth"], ["expanded"], axis=0),
             helper.make_node("Concat", ["b", "heads", "l", "depth"], ["merged"], axis=0)]
    for name in ("k", "v"):
        nodes += [helper.make_node("Unsqueeze", [name, "axis2"], [f"{name}u"]),
                  helper.make_node("Expand", [f"{name}u", "expanded"], [f"{name}e"]),
                  helper.make_node("Reshape", [f"{name}e", "merged"], [f"{name}h"])]
    nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s_"]),
              helper.make_node("Mul", ["s_", "scale"], ["ss"]),
              helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["y"])]
    ints = {"i0": [0], "i2": [2], "kvh": [KV_HEADS], "rep": [HEADS // KV_HEADS], "heads": [HEADS],
            "depth": [DEPTH], "axis2": [2]}
    graph = helper.make_graph(
        nodes, "gqa",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["B", HEADS, "S", DEPTH]),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, ["B", KV_HEADS, "L", DEPTH]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, ["B", KV_HEADS, "L", DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", HEADS, "S", DEPTH])],
        [numpy_helper.from_array(np.asarray(SCALE), "scale")]
        + [numpy_helper.from_array(np.asarray(v, np.int64), n) for n, v in ints.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


KV_HEADS = 1


def test_grouped_query_attention_takes_every_cache_length_at_execute() -> None:
    """Keys and values reach the products through grouped-query attention's Reshape (heads merged):
    the attention is kept at every length and batch, the same bits as fused at those dims."""
    model = gqa_model()
    rng = np.random.default_rng(7)
    with plugnn.InferenceSession(model, backends=["CpuAcc"]) as session:
        for step, (b, s, length) in enumerate([(1, 1, 9), (1, 1, 10), (1, 1, 11), (2, 1, 40), (2, 3, 41), (1, 1, 200)]):
            f = {"q": rng.standard_normal((b, HEADS, s, DEPTH)).astype(np.float32),
                 "k": rng.standard_normal((b, KV_HEADS, length, DEPTH)).astype(np.float32),
                 "v": rng.standard_normal((b, KV_HEADS, length, DEPTH)).astype(np.float32)}
            got, = session.run(None, f)
            loaded = fused(session, {n: a.shape for n, a in f.items()})
            assert loaded.refused_layers == []
            if step:  # the attention, the Unsqueezes and the Expands take the new dims at execute
                assert {n.name for n in loaded.optimized.layers if n.kind is LayerKind.PRECOMPILED} <= \
                    set(loaded.rebound_layers)
            with plugnn.InferenceSession(model, backends=["CpuAcc"]) as alone:
                want, = alone.run(None, f)
            np.testing.assert_array_equal(got, want, err_msg=f"batch {b}, queries {s}, keys {length}")
            rep = HEADS // KV_HEADS
            k = np.repeat(f["k"].astype(np.float64), rep, axis=1)
            v = np.repeat(f["v"].astype(np.float64), rep, axis=1)
            scores = f["q"].astype(np.float64) @ k.transpose(0, 1, 3, 2) * float(SCALE)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            expected = (p / p.sum(-1, keepdims=True)) @ v
            assert np.abs(got - expected).max() <= 1e-5 * np.sqrt(max(DEPTH, length)) * max(1.0, np.abs(expected).max())
        assert session.networks_built == 1
