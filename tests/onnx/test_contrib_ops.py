"""onnxruntime's com.microsoft operators (and SimplifiedLayerNormalization, which onnxruntime adds
to the default domain) against onnxruntime on small models built with onnx.helper, seeded
weights; tolerances rtol 1e-4 / atol 1e-5 unless stated (float32 products and softmaxes summed
in other orders). See docs/onnx.md, "onnxruntime's com.microsoft operators"."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.errors import ModelError

MS = "com.microsoft"
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def model(nodes: list, inputs: dict[str, Any], outputs: list[str], inits: dict[str, np.ndarray] | None = None,
          opset: int = 17) -> Any:
    def info(name: str, spec: Any) -> Any:
        shape, elem = spec if isinstance(spec, tuple) else (spec, F32)
        return helper.make_tensor_value_info(name, elem, shape)

    graph = helper.make_graph(nodes, "contrib", [info(n, s) for n, s in inputs.items()],
                              [helper.make_empty_tensor_value_info(n) for n in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
                             ir_version=8)


def node(op_type: str, inputs: list[str], outputs: list[str], **attrs: Any) -> Any:
    return helper.make_node(op_type, inputs, outputs, domain=MS, name=op_type.lower(), **attrs)


def rand(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def compare(m: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-4, atol: float = 1e-5) -> list[np.ndarray]:
    data = m.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = plugnn.InferenceSession(data).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


# ---- activations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type, inputs", [("Gelu", ["x"]), ("FastGelu", ["x"]), ("FastGelu", ["x", "b"]),
                                             ("BiasGelu", ["x", "b"]), ("QuickGelu", ["x"])])
def test_gelus(op_type: str, inputs: list[str]) -> None:
    m = model([node(op_type, inputs, ["y"])], {"x": [2, 3, 8]}, ["y"], {"b": rand(8, seed=1)} if "b" in inputs else {})
    compare(m, {"x": rand(2, 3, 8, scale=3.0)})


def test_quick_gelu_alpha() -> None:
    m = model([node("QuickGelu", ["x"], ["y"], alpha=1.0)], {"x": [4, 5]}, ["y"])
    compare(m, {"x": rand(4, 5, scale=3.0)})


def test_bias_add() -> None:
    """onnxruntime has no CPU kernel for BiasAdd: against its documented formula in NumPy."""
    b = rand(6, seed=1)
    m = model([node("BiasAdd", ["x", "b", "skip"], ["y"])], {"x": [2, 4, 6], "skip": [2, 4, 6]}, ["y"], {"b": b})
    x, skip = rand(2, 4, 6), rand(2, 4, 6, seed=2)
    got = plugnn.InferenceSession(m.SerializeToString()).run(None, {"x": x, "skip": skip})[0]
    np.testing.assert_allclose(got, x + b + skip, rtol=1e-6)


# ---- products -------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, a_shape, b_shape", [
    ({}, [3, 4], [4, 5]),
    ({"alpha": 0.5, "transA": 1}, [2, 4, 3], [2, 4, 5]),
    ({"transB": 1, "alpha": 2.0}, [2, 3, 4], [5, 4]),
    ({"transBatchA": 1}, [3, 2, 4], [2, 4, 5]),
    ({"transBatchB": 1, "transB": 1}, [2, 3, 4], [5, 2, 4]),
])
def test_fused_matmul(attrs: dict, a_shape: list[int], b_shape: list[int]) -> None:
    m = model([node("FusedMatMul", ["a", "b"], ["y"], **attrs)], {"a": a_shape}, ["y"], {"b": rand(*b_shape, seed=1)})
    compare(m, {"a": rand(*a_shape)})


@pytest.mark.parametrize("activation, extra", [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.2}),
                                               ("Sigmoid", {}), ("Tanh", {}),
                                               ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4})])
def test_fused_gemm(activation: str, extra: dict) -> None:
    attrs = {"transB": 1, "alpha": 0.7, "beta": 1.3, "activation": activation, **extra}
    m = model([node("FusedGemm", ["a", "w", "c"], ["y"], **attrs)], {"a": [3, 4]}, ["y"],
              {"w": rand(5, 4, seed=1), "c": rand(5, seed=2)})
    compare(m, {"a": rand(3, 4)})


def quantize_nbits(w: np.ndarray, bits: int, block: int, rng: np.random.Generator, zero_points: str) -> tuple:
    """MatMulNBits' inputs for float weights w [K, N]: B, scales and zero points."""
    k, n = w.shape
    blocks = -(-k // block)
    padded = np.zeros((blocks * block, n), np.float32)
    padded[:k] = w
    per_block = padded.T.reshape(n, blocks, block)
    levels = 2 ** bits - 1
    low, high = per_block.min(-1), per_block.max(-1)
    scales = np.maximum((high - low) / levels, 1e-6).astype(np.float32)
    zero = np.clip(np.round(-low / scales), 0, levels).astype(np.int32)
    q = np.clip(np.round(per_block / scales[..., None]) + zero[..., None], 0, levels).astype(np.uint8)
    bitstream = np.unpackbits(q[..., None], axis=-1, bitorder="little")[..., :bits].reshape(n, blocks, block * bits)
    packed = np.packbits(bitstream, axis=-1, bitorder="little")
    if zero_points == "packed":
        zp_bits = np.unpackbits(zero.astype(np.uint8)[..., None], axis=-1, bitorder="little")[..., :bits]
        zp_bits = zp_bits.reshape(n, blocks * bits)
        row = -(-blocks * bits // 8)
        zp_bits = np.concatenate([zp_bits, np.zeros((n, row * 8 - blocks * bits), np.uint8)], axis=1)
        zp = np.packbits(zp_bits, axis=-1, bitorder="little")
    elif zero_points == "float":
        zp = zero.astype(np.float32)
    else:
        zp = None
    return packed, scales, zp


@pytest.mark.parametrize("bits, block, k, zero_points", [(4, 32, 64, "packed"), (4, 16, 40, "none"),
                                                         (8, 32, 64, "packed"), (4, 32, 64, "float"),
                                                         (2, 16, 48, "packed")])
def test_matmul_nbits(bits: int, block: int, k: int, zero_points: str) -> None:
    rng = np.random.default_rng(3)
    n = 24
    packed, scales, zp = quantize_nbits(rng.standard_normal((k, n)).astype(np.float32), bits, block, rng, zero_points)
    inits = {"B": packed, "scales": scales, "bias": rand(n, seed=4)}
    inputs = ["a", "B", "scales", "zp" if zp is not None else "", "", "bias"]
    if zp is not None:
        inits["zp"] = zp
    m = model([node("MatMulNBits", inputs, ["y"], K=k, N=n, bits=bits, block_size=block)], {"a": [2, 3, k]}, ["y"],
              inits)
    compare(m, {"a": rand(2, 3, k)}, rtol=1e-4, atol=1e-4)


# ---- normalizations -------------------------------------------------------------------------------


@pytest.mark.parametrize("with_beta, with_bias, skip_shape", [(True, True, [2, 5, 8]), (False, False, [2, 5, 8]),
                                                              (True, False, [5, 8])])
def test_skip_layer_normalization(with_beta: bool, with_bias: bool, skip_shape: list[int]) -> None:
    inputs = ["x", "skip", "gamma", "beta" if with_beta else "", "bias" if with_bias else ""]
    m = model([node("SkipLayerNormalization", inputs, ["y", "", "", "sum"], epsilon=1e-5)],
              {"x": [2, 5, 8], "skip": skip_shape}, ["y", "sum"],
              {"gamma": rand(8, seed=1), "beta": rand(8, seed=2), "bias": rand(8, seed=3)})
    compare(m, {"x": rand(2, 5, 8), "skip": rand(*skip_shape, seed=4)})


def test_skip_simplified_layer_normalization() -> None:
    m = model([node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["y", "", "", "sum"])],
              {"x": [2, 5, 8], "skip": [2, 5, 8]}, ["y", "sum"], {"gamma": rand(8, seed=1), "bias": rand(8, seed=3)})
    compare(m, {"x": rand(2, 5, 8), "skip": rand(2, 5, 8, seed=4)})


def test_simplified_layer_normalization_in_the_default_domain() -> None:
    n = helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["y"], axis=-1, epsilon=1e-6)
    m = model([n], {"x": [3, 16]}, ["y"], {"gamma": rand(16, seed=1)})
    compare(m, {"x": rand(3, 16)})


@pytest.mark.parametrize("segments, mask, positions", [(True, True, False), (False, False, False), (True, True, True)])
def test_embed_layer_normalization(segments: bool, mask: bool, positions: bool) -> None:
    batch, seq, hidden, vocab = 2, 6, 8, 20
    rng = np.random.default_rng(5)
    inputs = ["ids", "segments" if segments else "", "words", "pos", "seg_table" if segments else "", "gamma", "beta",
              "mask" if mask else "", "positions" if positions else ""]
    graph_inputs: dict[str, Any] = {"ids": ([batch, seq], I32)}
    feeds = {"ids": rng.integers(0, vocab, (batch, seq)).astype(np.int32)}
    if segments:
        graph_inputs["segments"] = ([batch, seq], I32)
        feeds["segments"] = rng.integers(0, 2, (batch, seq)).astype(np.int32)
    if mask:
        graph_inputs["mask"] = ([batch, seq], I32)
        feeds["mask"] = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    if positions:
        graph_inputs["positions"] = ([batch, seq], I32)
        feeds["positions"] = rng.integers(0, 10, (batch, seq)).astype(np.int32)
    inits = {"words": rand(vocab, hidden, seed=1), "pos": rand(10, hidden, seed=2), "seg_table": rand(2, hidden, seed=3),
             "gamma": rand(hidden, seed=4), "beta": rand(hidden, seed=6)}
    m = model([node("EmbedLayerNormalization", inputs, ["y", "mask_index", "sum"], epsilon=1e-5)], graph_inputs,
              ["y", "mask_index", "sum"], inits)
    compare(m, feeds)


# ---- attention --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask_kind, unidirectional", [(None, 0), ("raw", 0), ("raw", 1), ("lengths", 0),
                                                       ("3d", 0), (None, 1)])
def test_attention(mask_kind: str | None, unidirectional: int) -> None:
    batch, seq, hidden, heads = 2, 5, 16, 4
    rng = np.random.default_rng(7)
    inputs = ["x", "w", "b", "mask" if mask_kind else ""]
    graph_inputs: dict[str, Any] = {"x": [batch, seq, hidden]}
    feeds = {"x": rand(batch, seq, hidden)}
    if mask_kind == "raw":
        graph_inputs["mask"] = ([batch, seq], I32)
        feeds["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    elif mask_kind == "lengths":
        graph_inputs["mask"] = ([batch], I32)
        feeds["mask"] = np.array([3, 5], np.int32)
    elif mask_kind == "3d":
        graph_inputs["mask"] = ([batch, seq, seq], I32)
        feeds["mask"] = rng.integers(0, 2, (batch, seq, seq)).astype(np.int32)
        feeds["mask"][:, :, 0] = 1
    m = model([node("Attention", inputs, ["y"], num_heads=heads, unidirectional=unidirectional)], graph_inputs, ["y"],
              {"w": rand(hidden, 3 * hidden, seed=1, scale=0.3), "b": rand(3 * hidden, seed=2)})
    compare(m, feeds)


def test_attention_with_past() -> None:
    batch, seq, past, hidden, heads = 2, 3, 4, 8, 2
    m = model([node("Attention", ["x", "w", "b", "", "past"], ["y", "present"], num_heads=heads, unidirectional=1)],
              {"x": [batch, seq, hidden], "past": [2, batch, heads, past, hidden // heads]}, ["y", "present"],
              {"w": rand(hidden, 3 * hidden, seed=1, scale=0.3), "b": rand(3 * hidden, seed=2)})
    compare(m, {"x": rand(batch, seq, hidden), "past": rand(2, batch, heads, past, hidden // heads, seed=3)})


def test_attention_with_attention_bias_and_scale() -> None:
    batch, seq, hidden, heads = 2, 3, 8, 2
    m = model([node("Attention", ["x", "w", "b", "mask", "", "bias"], ["y"], num_heads=heads, scale=0.3)],
              {"x": [batch, seq, hidden], "mask": ([batch, seq], I32), "bias": [1, heads, seq, seq]}, ["y"],
              {"w": rand(hidden, 3 * hidden, seed=1, scale=0.3), "b": rand(3 * hidden, seed=2)})
    compare(m, {"x": rand(batch, seq, hidden), "mask": np.array([[1, 1, 0], [1, 1, 1]], np.int32),
                "bias": rand(1, heads, seq, seq, seed=4)})


def test_attention_qkv_hidden_sizes() -> None:
    m = model([node("Attention", ["x", "w", "b"], ["y"], num_heads=2, qkv_hidden_sizes=[8, 8, 12])], {"x": [1, 4, 6]},
              ["y"], {"w": rand(6, 28, seed=1), "b": rand(28, seed=2)})
    compare(m, {"x": rand(1, 4, 6)})


@pytest.mark.parametrize("form", ["separate", "bias", "bnsh", "packed_qkv", "packed_kv", "past", "mask"])
def test_multi_head_attention(form: str) -> None:
    batch, seq, kv, hidden, heads = 2, 4, 6, 8, 2
    head = hidden // heads
    rng = np.random.default_rng(9)
    inputs: list[str] = ["q", "k", "v"]
    graph_inputs: dict[str, Any] = {"q": [batch, seq, hidden], "k": [batch, kv, hidden], "v": [batch, kv, hidden]}
    feeds = {"q": rand(batch, seq, hidden), "k": rand(batch, kv, hidden, seed=1), "v": rand(batch, kv, hidden, seed=2)}
    inits: dict[str, np.ndarray] = {}
    outputs = ["y"]
    attrs: dict[str, Any] = {"num_heads": heads}
    if form == "bias":
        inputs.append("bias")
        inits["bias"] = rand(3 * hidden, seed=3)
    elif form == "bnsh":
        graph_inputs.update(k=[batch, heads, kv, head], v=[batch, heads, kv, head])
        feeds.update(k=rand(batch, heads, kv, head, seed=1), v=rand(batch, heads, kv, head, seed=2))
    elif form == "packed_qkv":
        inputs = ["q"]
        graph_inputs = {"q": [batch, seq, heads, 3, head]}
        feeds = {"q": rand(batch, seq, heads, 3, head)}
    elif form == "packed_kv":
        inputs = ["q", "k"]
        graph_inputs = {"q": [batch, seq, hidden], "k": [batch, kv, heads, 2, head]}
        feeds = {"q": feeds["q"], "k": rand(batch, kv, heads, 2, head, seed=1)}
    elif form == "past":
        inputs += ["", "", "", "past_k", "past_v"]
        graph_inputs.update(k=[batch, seq, hidden], v=[batch, seq, hidden], past_k=[batch, heads, 3, head],
                            past_v=[batch, heads, 3, head])
        feeds.update(k=rand(batch, seq, hidden, seed=1), v=rand(batch, seq, hidden, seed=2),
                     past_k=rand(batch, heads, 3, head, seed=5), past_v=rand(batch, heads, 3, head, seed=6))
        outputs += ["present_k", "present_v"]
        attrs["unidirectional"] = 1
    elif form == "mask":
        inputs += ["", "mask"]
        graph_inputs["mask"] = ([batch, kv], I32)
        feeds["mask"] = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    m = model([node("MultiHeadAttention", inputs, outputs, **attrs)], graph_inputs, outputs, inits)
    del rng
    if not form.startswith("packed"):
        compare(m, feeds)
        return
    # onnxruntime's CPU kernel has no packed forms: plugnn's packed run against onnxruntime's unpacked one
    if form == "packed_qkv":
        packed = feeds["q"]
        unpacked = {n: packed[:, :, :, i].reshape(batch, seq, hidden) for i, n in enumerate("qkv")}
        shapes = {n: [batch, seq, hidden] for n in "qkv"}
    else:
        unpacked = {"q": feeds["q"], "k": feeds["k"][:, :, :, 0].reshape(batch, kv, hidden),
                    "v": feeds["k"][:, :, :, 1].reshape(batch, kv, hidden)}
        shapes = {"q": [batch, seq, hidden], "k": [batch, kv, hidden], "v": [batch, kv, hidden]}
    plain = model([node("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=heads)], shapes, ["y"])
    want = ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, unpacked)[0]
    got = plugnn.InferenceSession(m.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def rotary_caches(rows: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    angles = np.arange(rows)[:, None] / (10000 ** (np.arange(half) / half))[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


@pytest.mark.parametrize("layout, interleaved, positions, rotary_dim", [
    ("bsh", 0, "offset", 0), ("bsh", 1, "offset", 0), ("bnsh", 0, "ids", 0), ("bnsh", 1, "ids", 0),
    ("bsh", 0, "ids", 4)])
def test_rotary_embedding(layout: str, interleaved: int, positions: str, rotary_dim: int) -> None:
    batch, seq, heads, head = 2, 5, 2, 8
    half = (rotary_dim or head) // 2
    cos, sin = rotary_caches(16, half)
    shape = [batch, seq, heads * head] if layout == "bsh" else [batch, heads, seq, head]
    if positions == "offset":
        pos, pos_shape = np.array([3], np.int64), [1]
    else:
        pos, pos_shape = np.random.default_rng(2).integers(0, 16, (batch, seq)).astype(np.int64), [batch, seq]
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs.update(rotary_embedding_dim=rotary_dim, num_heads=heads)
    m = model([node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], **attrs)],
              {"x": shape, "pos": (pos_shape, I64)}, ["y"], {"cos": cos, "sin": sin})
    compare(m, {"x": rand(*shape), "pos": pos})


@pytest.mark.parametrize("case", ["prompt", "prompt_gqa", "decode", "decode_gqa_rotary", "prompt_rotary", "packed",
                                  "window", "decode_window", "softcap", "padded_decode"])
def test_group_query_attention(case: str) -> None:
    heads, kv_heads, head = (4, 2, 8) if "gqa" in case or case in ("packed", "window") else (2, 2, 8)
    if "rotary" in case:
        head = 16  # onnxruntime's rotary kernel takes multiples of 16
    batch = 1 if case == "padded_decode" else 2
    seq, past = (1, 5) if "decode" in case else (6, 0)
    total = past + seq
    feeds: dict[str, np.ndarray] = {}
    attrs: dict[str, Any] = {"num_heads": heads, "kv_num_heads": kv_heads}
    graph_inputs: dict[str, Any] = {}
    if case == "packed":
        graph_inputs["q"] = [batch, seq, (heads + 2 * kv_heads) * head]
        inputs = ["q", "", ""]
    else:
        graph_inputs.update(q=[batch, seq, heads * head], k=[batch, seq, kv_heads * head],
                            v=[batch, seq, kv_heads * head])
        inputs = ["q", "k", "v"]
    for name, shape in graph_inputs.items():
        feeds[name] = rand(*shape, seed=len(feeds))
    buffer = past + 2 if case == "padded_decode" else past
    if past:
        graph_inputs.update(past_k=[batch, kv_heads, buffer, head], past_v=[batch, kv_heads, buffer, head])
        feeds.update(past_k=rand(batch, kv_heads, buffer, head, seed=7), past_v=rand(batch, kv_heads, buffer, head, seed=8))
        inputs += ["past_k", "past_v"]
    else:
        inputs += ["", ""]
    inputs += ["seqlens", "total"]
    graph_inputs["seqlens"] = ([batch], I32)
    feeds["seqlens"] = np.full(batch, total - 1, np.int32)
    inits: dict[str, np.ndarray] = {"total": np.array(buffer + seq if case == "padded_decode" else total, np.int32)}
    if case == "padded_decode":
        feeds["seqlens"] = np.array([total - 1], np.int32)  # 5 past tokens in a buffer of 7
    if "rotary" in case:
        attrs["do_rotary"] = 1
        inits["cos"], inits["sin"] = rotary_caches(32, head // 2)
        inputs += ["cos", "sin"]
    if "window" in case:
        attrs["local_window_size"] = 2
    if case == "softcap":
        attrs["softcap"] = 2.0
    m = model([node("GroupQueryAttention", inputs, ["y", "present_k", "present_v"], **attrs)], graph_inputs,
              ["y", "present_k", "present_v"], inits)
    compare(m, feeds)


# ---- what is refused ----------------------------------------------------------------------------


def test_an_unknown_com_microsoft_operator_names_what_plugnn_imports() -> None:
    m = model([node("Frobnicate", ["x"], ["y"])], {"x": [2]}, ["y"])
    for load in (plugnn.onnx.load, lambda mm: plugnn.InferenceSession(mm.SerializeToString())):
        with pytest.raises(ModelError, match=r"operator\(s\) Frobnicate of domain 'com.microsoft' are not supported; "
                                             r"plugnn imports \d+ operators of com.microsoft \(Attention, BiasAdd"):
            load(m)


def test_a_contrib_form_plugnn_does_not_import_is_named() -> None:
    m = model([node("Attention", ["x", "w"], ["y"], num_heads=2, do_rotary=1)], {"x": [1, 2, 4]}, ["y"],
              {"w": rand(4, 12)})
    with pytest.raises(ModelError, match=r"node 'attention' \(#0, Attention\): attribute 'do_rotary' = 1 is not "
                                         r"supported"):
        plugnn.onnx.load(m)
    bad = model([node("Gelu", ["x"], ["y"])], {"x": ([2], I64)}, ["y"])
    with pytest.raises(ModelError, match=r"input 0 \(X\) is int64; Gelu takes float32"):
        plugnn.onnx.load(bad)
    gqa = model([node("GroupQueryAttention", ["q", "k", "v", "", "", "s", "t"], ["y", "pk", "pv"], num_heads=3,
                      kv_num_heads=2)], {"q": [1, 2, 12], "k": [1, 2, 8], "v": [1, 2, 8], "s": ([1], I32)},
                ["y", "pk", "pv"], {"t": np.array(2, np.int32)})
    with pytest.raises(ModelError, match="num_heads = 3 is not a multiple of kv_num_heads = 2"):
        plugnn.onnx.load(gqa)


def test_the_default_domain_table_is_unchanged() -> None:
    """plugnn.onnx.OPERATORS lists the default domain only; the other domains have their own."""
    from plugnn.onnx.importer import supported_operators

    assert "Attention" not in plugnn.onnx.OPERATORS or "Attention" in supported_operators("")
    assert "SkipLayerNormalization" not in plugnn.onnx.OPERATORS
    contrib = supported_operators(MS)
    for name in ("Attention", "MultiHeadAttention", "GroupQueryAttention", "RotaryEmbedding", "MatMulNBits",
                 "SkipLayerNormalization", "EmbedLayerNormalization", "FusedMatMul", "FastGelu"):
        assert name in contrib
