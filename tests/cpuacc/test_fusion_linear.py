"""CpuAcc's linear fusion (plugins/accel/src/opt/linear_fusion.h, linear.h): a MatMul with constant
weights (or a Gemm between Reshapes, as transformers' Conv1D exports) with the bias Add, the
residual Add, the activation and the Reshapes that alone consume its output, run as one
PRECOMPILED layer whose GEMM epilogue adds the bias and the residual and applies the activation
(and a LayerNorm or RMSNorm over the last axis after them), or writes the pieces of a Split
along its last axis; and sibling projections (products of one input with nothing but a bias
after them: BERT's query, key and value) as one GEMM with an output each.

Checked on every kernel set (option isa) at 1, 2, 3 and 7 threads: against NumPy float64
within max|a - b| <= 1e-4 * max(1, max|b|) (float32 products summed in another order), the same
bits at every thread count, and the same bits as the unfused layers on CpuAcc (option fuse=0:
the same GEMM, the same adds, the same activation kernel); explain() names the replaced layers.
What must not fuse stays apart: a bias broadcast along another axis, a bias given at run time,
an intermediate tensor read twice or that is an output, weights given at run time or with a
batch dim, a residual that broadcasts. A session's specializations share the packed weights."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import Network
from plugnn.network import Tensor

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, THREADS

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
TOLERANCE = 1e-4
RNG = np.random.default_rng(2611)
F32 = np.float32


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(F32)


def runtime(fuse: bool = True, num_threads: int = 2, isa: str = "auto") -> plugnn.Runtime:
    return plugnn.Runtime(backend_options={"CpuAcc": {"fuse": "1" if fuse else "0", "num_threads": num_threads,
                                                      "isa": isa}})


def plan(optimized: Any) -> list[tuple[str, str]]:
    """(type, backend) of every layer that runs, a PRECOMPILED layer's type with its label."""
    return [(r["type"], r["backend"]) for r in optimized.assignments()]


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    err = float(np.max(np.abs(actual.astype(np.float64) - expected))) if expected.size else 0.0
    assert err <= TOLERANCE * scale, f"max|diff| {err:g} > {TOLERANCE:g} * {scale:g}"


def run(net: Network, rt: plugnn.Runtime, inputs: Mapping[str, np.ndarray]) -> tuple[Any, dict[str, np.ndarray]]:
    optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
    with rt.load_network(optimized) as loaded:
        return optimized, {k: v.copy() for k, v in loaded.run(dict(inputs)).items()}


def check(net: Network, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
          same_bits_as_unfused: bool = True) -> Any:
    """Runs `net` fused on every kernel set and thread count: close to `expected`, the same bits
    at every thread count and (unless told otherwise) as the unfused layers with that kernel
    set. Returns the fused plan of the last run."""
    optimized = None
    for isa in ISAS:
        with runtime(fuse=False, isa=isa) as rt:
            _, unfused = run(net, rt, inputs)
        first: dict[str, np.ndarray] | None = None
        for n in THREADS:
            with runtime(fuse=True, num_threads=n, isa=isa) as rt:
                optimized, out = run(net, rt, inputs)
            if first is None:
                first = out
                for name, want in expected.items():
                    assert_close(out[name], want)
                    if same_bits_as_unfused:
                        np.testing.assert_array_equal(out[name], unfused[name], err_msg=f"isa={isa}: fused != unfused")
                    else:
                        assert_close(out[name], unfused[name].astype(np.float64))
            else:
                for name in out:
                    np.testing.assert_array_equal(out[name], first[name], err_msg=f"isa={isa} threads={n}")
    return optimized


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


ACTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": lambda v: v,
    "relu": lambda v: np.maximum(v, 0.0),
    "gelu": gelu,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
}


def activation(net: Network, t: Tensor, act: str, name: str) -> Tensor:
    return t if act == "none" else net.add_activation(t, act, name=name)


# ---- MatMul + bias + residual + activation -------------------------------------------------------


@pytest.mark.parametrize("a_shape,n,bias_rank,residual,act", [
    ((13, 37), 29, 1, False, "none"),
    ((13, 37), 29, 2, True, "relu"),
    ((1, 37), 40, 1, True, "gelu"),           # M == 1: the GEMV kernel
    ((2, 9, 17), 33, 1, False, "gelu"),
    ((2, 9, 17), 33, 3, True, "none"),
    ((3, 7, 64), 64, 1, True, "sigmoid"),
    ((2, 3, 5, 19), 23, 1, True, "relu"),
    ((2, 3, 5, 19), 23, 4, False, "gelu"),
    ((1, 128, 64), 256, 1, False, "gelu"),    # BERT-tiny's intermediate layer
])
def test_matmul_bias_residual_activation_become_one_layer(a_shape: tuple[int, ...], n: int, bias_rank: int,
                                                           residual: bool, act: str) -> None:
    k = a_shape[-1]
    net = Network("linear")
    x = net.add_input("x", a_shape)
    w, b = rand(k, n, scale=k ** -0.5), rand(*([1] * (bias_rank - 1) + [n]))
    y = net.add_add(net.add_matmul(x, w, name="blk/mm"), b, name="blk/bias")
    out_shape = a_shape[:-1] + (n,)
    r = rand(*out_shape)
    if residual:
        y = net.add_add(net.add_input("r", out_shape), y, name="blk/res")
    net.add_output(activation(net, y, act, "blk/act"), "y")
    inputs = {"x": rand(*a_shape)} | ({"r": r} if residual else {})
    ref = x64 = inputs["x"].astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64)
    if residual:
        ref = x64 + r
    optimized = check(net, inputs, {"y": ACTS[act](ref)})
    names = ["blk/mm", "blk/bias"] + (["blk/res"] if residual else []) + ([] if act == "none" else ["blk/act"])
    ((kind, backend),) = plan(optimized)
    assert backend == "CpuAcc" and kind.startswith(f"Precompiled(matmul [*, {k}] x [{k}, {n}] + bias"), kind
    assert ("+ residual" in kind) == residual and ((act if act != "none" else "?") in kind) == (act != "none")
    (layer,) = optimized.layers
    assert list(layer.replaces) == names
    assert layer.name == "+".join(["blk/mm"] + [s.split("/")[1] for s in names[1:]])
    text = optimized.explain()
    assert f"stands for: {', '.join(names)}" in text, text


def test_matmul_with_the_bias_first_and_a_residual_alone() -> None:
    """Add(bias, x @ w) (the bias as the first operand), and x @ w + residual without a bias."""
    net = Network("linear")
    x = net.add_input("x", (5, 11))
    w1, w2, b = rand(11, 7), rand(7, 7), rand(7)
    h = net.add_add(b, net.add_matmul(x, w1, name="m1"), name="b1")
    net.add_output(net.add_add(net.add_matmul(h, w2, name="m2"), h, name="res"), "y")
    xv = rand(5, 11)
    h64 = xv.astype(np.float64) @ w1 + b
    optimized = check(net, {"x": xv}, {"y": h64 @ w2 + h64}, same_bits_as_unfused=False)
    # h is read twice (by m2 and by res), so m1+b1 is one layer and m2+res another
    assert [layer.name for layer in optimized.layers] == ["m1+b1", "m2+res"]


def test_gelu_and_tanh_gelu_decompositions_fuse_too() -> None:
    """BERT's GELU written as Div, Erf, Add, Mul, Mul (a pattern match) joins the epilogue."""
    net = Network("ffn")
    x = net.add_input("x", (2, 9, 16))
    w, b = rand(16, 40, scale=0.3), rand(40)
    h = net.add_add(net.add_matmul(x, w, name="mm"), b, name="bias")
    d = net.add_div(h, F32(math.sqrt(2.0)), name="g1")
    p = net.add_add(net.add_unary("erf", d, name="g2"), F32(1.0), name="g3")
    net.add_output(net.add_mul(net.add_mul(h, p, name="g4"), F32(0.5), name="g5"), "y")
    xv = rand(2, 9, 16)
    optimized = check(net, {"x": xv}, {"y": gelu(xv.astype(np.float64) @ w + b)}, same_bits_as_unfused=False)
    ((kind, _),) = plan(optimized)
    assert "+ bias + gelu(" in kind
    assert list(optimized.layers[0].replaces) == ["mm", "bias", "g1", "g2", "g3", "g4", "g5"]


def layer_norm(v: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, eps: float, rms: bool) -> np.ndarray:
    mean = 0.0 if rms else v.mean(axis=-1, keepdims=True)
    var = (v * v).mean(axis=-1, keepdims=True) if rms else ((v - mean) ** 2).mean(axis=-1, keepdims=True)
    return (v - mean) / np.sqrt(var + eps) * scale + (0.0 if bias is None else bias)


@pytest.mark.parametrize("a_shape,n,op,with_bias", [
    ((1, 128, 256), 64, "layer", True),    # BERT-tiny's output block
    ((2, 9, 17), 40, "layer", True),
    ((13, 37), 29, "rms", False),
    ((3, 5, 19), 700, "layer", True),      # N above an N block of the GEMM: normalized after it
])
def test_residual_block_with_its_layer_norm_becomes_one_layer(a_shape: tuple[int, ...], n: int, op: str,
                                                               with_bias: bool) -> None:
    """x @ w + bias + residual, then LayerNorm (or RMSNorm) over the last axis: one layer."""
    k = a_shape[-1]
    out_shape = a_shape[:-1] + (n,)
    net = Network("block")
    x = net.add_input("x", a_shape)
    w, b = rand(k, n, scale=k ** -0.5), rand(n)
    scale, nbias = rand(n) + 1, rand(n) if with_bias else None
    y = net.add_add(net.add_add(net.add_matmul(x, w, name="mm"), b, name="bias"), net.add_input("r", out_shape),
                    name="res")
    net.add_output(net.add_normalization(op, y, scale, nbias, epsilon=1e-5, name="ln"), "y")
    inputs = {"x": rand(*a_shape), "r": rand(*out_shape)}
    pre = inputs["x"].astype(np.float64) @ w + b + inputs["r"]
    expected = layer_norm(pre, scale.astype(np.float64), None if nbias is None else nbias.astype(np.float64), 1e-5,
                          op == "rms")
    optimized = check(net, inputs, {"y": expected})
    ((kind, _),) = plan(optimized)
    assert kind.endswith(f"+ residual + {op}_norm(eps 1e-05))"), kind
    assert list(optimized.layers[0].replaces) == ["mm", "bias", "res", "ln"]


def test_a_layer_norm_over_two_axes_is_not_fused() -> None:
    net = Network("ln2")
    x = net.add_input("x", (2, 6, 9))
    w, b = rand(9, 5), rand(5)
    y = net.add_add(net.add_matmul(x, w, name="mm"), b, name="bias")
    net.add_output(net.add_normalization("layer", y, np.ones((6, 5), F32), axis=-2, name="ln"), "y")
    inputs = {"x": rand(2, 6, 9)}
    pre = inputs["x"].astype(np.float64) @ w + b
    mean = pre.mean(axis=(-2, -1), keepdims=True)
    var = ((pre - mean) ** 2).mean(axis=(-2, -1), keepdims=True)
    optimized = check(net, inputs, {"y": (pre - mean) / np.sqrt(var + 1e-5)})
    assert [layer.name for layer in optimized.layers] == ["mm+bias", "ln"]


# ---- Gemm between Reshapes (transformers' Conv1D, GPT-2) -----------------------------------------


@pytest.mark.parametrize("transpose_b,alpha,beta,tail", [
    (False, 1.0, 1.0, "residual"),
    (True, 1.0, 1.0, "gelu_tanh"),
    (False, 0.5, 2.0, "none"),
    (True, 1.0, 1.0, "residual+relu"),
])
def test_gemm_between_reshapes_becomes_one_layer(transpose_b: bool, alpha: float, beta: float, tail: str) -> None:
    s, e, f = 13, 24, 40
    net = Network("conv1d")
    x = net.add_input("x", (1, s, e))
    w = rand(f, e, scale=0.2) if transpose_b else rand(e, f, scale=0.2)
    c = rand(f)
    a = net.add_reshape(x, (s, e), name="c/r0")
    y = net.add_reshape(net.add_fully_connected(a, w, c, alpha=alpha, beta=beta, transpose_b=transpose_b, name="c/gemm"),
                        (1, s, f), name="c/r1")
    inputs = {"x": rand(1, s, e)}
    w64 = (w.T if transpose_b else w).astype(np.float64)
    ref = alpha * (inputs["x"].astype(np.float64) @ w64) + beta * c.astype(np.float64)
    names = ["c/r0", "c/gemm", "c/r1"]
    if "residual" in tail:
        inputs["r"] = rand(1, s, f)
        y = net.add_add(y, net.add_input("r", (1, s, f)), name="c/res")
        ref = ref + inputs["r"]
        names.append("c/res")
    if tail in ("gelu_tanh", "residual+relu"):
        act = "gelu_tanh" if tail == "gelu_tanh" else "relu"
        y = net.add_activation(y, act, name="c/act")
        ref = np.maximum(ref, 0.0) if act == "relu" else \
            0.5 * ref * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (ref + 0.044715 * ref ** 3)))
        names.append("c/act")
    net.add_output(y, "y")
    optimized = check(net, inputs, {"y": ref})
    ((kind, _),) = plan(optimized)
    assert kind.startswith(f"Precompiled(gemm [*, {e}] x [{e}, {f}]" + ("^T" if transpose_b else "")), kind
    assert "2 reshapes absorbed" in kind
    assert list(optimized.layers[0].replaces) == names


def test_gemm_without_reshapes_is_left_to_layer_fusion() -> None:
    """A rank-2 Gemm with a residual and an activation stays a FullyConnected layer (fusion.h)."""
    net = Network("fc")
    x = net.add_input("x", (6, 10))
    w, c = rand(10, 8), rand(8)
    y = net.add_add(net.add_fully_connected(x, w, c, name="fc"), net.add_input("r", (6, 8)), name="res")
    net.add_output(net.add_activation(y, "relu", name="act"), "y")
    inputs = {"x": rand(6, 10), "r": rand(6, 8)}
    optimized = check(net, inputs, {"y": np.maximum(inputs["x"].astype(np.float64) @ w + c + inputs["r"], 0.0)})
    assert plan(optimized) == [("FullyConnected", "CpuAcc")]


# ---- What must not fuse ----------------------------------------------------------------------------


def numpy_of(inputs: Mapping[str, np.ndarray], w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x @ w + b in float64, with w and b the run-time inputs where the network has them."""
    w64 = inputs.get("w", w).astype(np.float64)
    return inputs["x"].astype(np.float64) @ w64 + inputs.get("b", b).astype(np.float64)


@pytest.mark.parametrize("case", ["bias along another axis", "bias at run time", "product read twice",
                                  "product is an output", "weights at run time", "weights with a batch dim"])
def test_what_must_not_fuse_stays_apart(case: str) -> None:
    net = Network("apart")
    x = net.add_input("x", (2, 6, 9))
    inputs: dict[str, np.ndarray] = {"x": rand(2, 6, 9)}
    w = rand(2, 9, 5) if case == "weights with a batch dim" else rand(9, 5)
    b = rand(6, 1) if case == "bias along another axis" else rand(5)
    if case == "weights at run time":
        inputs["w"] = rand(9, 5)
        product = net.add_matmul(x, net.add_input("w", (9, 5)), name="mm")
    else:
        product = net.add_matmul(x, w, name="mm")
    if case == "bias at run time":
        inputs["b"] = b
        y = net.add_add(product, net.add_input("b", (5,)), name="bias")
    else:
        y = net.add_add(product, b, name="bias")
    net.add_output(y, "y")
    expected = {"y": numpy_of(inputs, w, b)}
    if case == "product read twice":
        net.add_output(net.add_activation(product, "relu", name="other"), "z")
        expected["z"] = np.maximum(inputs["x"].astype(np.float64) @ w, 0.0)
    elif case == "product is an output":
        net.add_output(product, "p")
        expected["p"] = inputs["x"].astype(np.float64) @ w
    optimized = check(net, inputs, expected)
    kinds = [k for k, _ in plan(optimized)]
    assert not any(k.startswith("Precompiled") for k in kinds), kinds
    assert "Matmul" in kinds and "ElementwiseBinary" in kinds


def test_a_residual_that_broadcasts_is_not_fused() -> None:
    """x @ w + bias fuses; the Add of a [1, S, N] tensor to [B, S, N] stays a layer of its own."""
    net = Network("bcast")
    x = net.add_input("x", (3, 4, 8))
    w, b = rand(8, 6), rand(6)
    y = net.add_add(net.add_add(net.add_matmul(x, w, name="mm"), b, name="bias"), net.add_input("r", (1, 4, 6)),
                    name="res")
    net.add_output(y, "y")
    inputs = {"x": rand(3, 4, 8), "r": rand(1, 4, 6)}
    optimized = check(net, inputs, {"y": inputs["x"].astype(np.float64) @ w + b + inputs["r"]})
    assert [layer.name for layer in optimized.layers] == ["mm+bias", "res"]


# ---- Specializations share the packed weights ----------------------------------------------------


W_SHARED = rand(20, 12)
B_SHARED = rand(12)
W_SHARED.setflags(write=False)
B_SHARED.setflags(write=False)


def shared_net(seq: int) -> Network:
    net = Network("shared")
    x = net.add_input("x", (1, seq, 20))
    y = net.add_add(net.add_matmul(x, net.add_shared_constant(W_SHARED, "w"), name="mm"),
                    net.add_shared_constant(B_SHARED, "b"), name="bias")
    net.add_output(net.add_activation(y, "relu", name="act"), "y")
    return net


@pytest.mark.parametrize("isa", ISAS)
def test_reshaped_fused_layers_share_the_packed_weights(isa: str) -> None:
    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2, "isa": isa}}) as rt:
        first = rt.load_network(plugnn.optimize(shared_net(7), rt, ["CpuAcc"]))
        packed = int(rt.backend("CpuAcc").get_option("packed_weight_bytes"))
        assert packed > 0
        second_opt = plugnn.optimize(shared_net(31), rt, ["CpuAcc"])
        second = rt.load_network(second_opt, reshape_from=[first])
        assert [n.name for n in second_opt.layers] == ["mm+bias+act"]
        assert second.reshaped_layers == ["mm+bias+act"] or set(second.reshaped_layers) == {"mm+bias+act"}
        assert int(rt.backend("CpuAcc").get_option("packed_weight_bytes")) == packed
        first.unload()
        xv = rand(1, 31, 20)
        got = second.run({"x": xv})["y"]
        assert_close(got, np.maximum(xv.astype(np.float64) @ W_SHARED + B_SHARED, 0.0))
        second.unload()



# ---- Sibling projections: products of one input as one GEMM (linear.h's accel_linear_group) ----


@pytest.mark.parametrize("a_shape,ns,biases,reshape", [
    ((1, 128, 64), (64, 64, 64), (True, True, True), False),   # BERT's query, key, value: stored in place
    ((2, 9, 17), (20, 36), (True, False), False),              # widths off the panels: through the workspace
    ((13, 37), (32, 32, 32, 32, 7), (True,) * 5, False),       # four join, the fifth fuses alone
    ((1, 5), (16, 48), (False, False), False),                 # M == 1, bare MatMuls
    ((3, 11, 16), (32, 32), (True, True), True),               # a Reshape after the first
    ((0, 8), (32, 16), (True, True), False),                   # no rows
])
def test_sibling_projections_become_one_gemm(a_shape: tuple[int, ...], ns: tuple[int, ...],
                                             biases: tuple[bool, ...], reshape: bool) -> None:
    k = a_shape[-1]
    net = Network("projections")
    x = net.add_input("x", a_shape)
    xv = rand(*a_shape)
    expected, names = {}, []
    for g, (n, with_bias) in enumerate(zip(ns, biases)):
        w, b = rand(k, n, scale=k ** -0.5), rand(n)
        y = net.add_matmul(x, w, name=f"p{g}/mm")
        ref = xv.astype(np.float64) @ w.astype(np.float64)
        names.append(f"p{g}/mm")
        if with_bias:
            y = net.add_add(y, b, name=f"p{g}/bias")
            ref = ref + b
            names.append(f"p{g}/bias")
        if reshape and g == 0:
            y = net.add_reshape(y, (-1, n), name=f"p{g}/flat")
            ref = ref.reshape(-1, n)
            names.append(f"p{g}/flat")
        net.add_output(y, f"y{g}")
        expected[f"y{g}"] = ref
    optimized = check(net, {"x": xv}, expected)
    grouped = min(len(ns), 4)
    kinds = plan(optimized)
    label = f"Precompiled(matmul [*, {k}] x [{k}, {' | '.join(str(n) for n in ns[:grouped])}]"
    assert [kind for kind, _ in kinds if kind.startswith(label)] and all(b == "CpuAcc" for _, b in kinds), kinds
    assert len(kinds) == 1 + (len(ns) > 4)
    group = optimized.layers[0]
    in_group = [n for n in names if int(n[1]) < grouped]
    assert sorted(group.replaces) == sorted(in_group)
    assert f"{grouped} projections of one input" in kinds[0][0]


def test_projections_with_more_than_a_bias_or_of_other_inputs_stay_apart() -> None:
    """Only products with nothing but a bias (and Reshapes) after them join; one with an
    activation, or of another tensor, is a fused linear layer of its own."""
    net = Network("mixed")
    x = net.add_input("x", (6, 16))
    z = net.add_input("z", (6, 16))
    w = [rand(16, 32, scale=0.25) for _ in range(4)]
    b = [rand(32) for _ in range(4)]
    net.add_output(net.add_add(net.add_matmul(x, w[0], name="q"), b[0], name="qb"), "yq")
    net.add_output(net.add_add(net.add_matmul(x, w[1], name="k"), b[1], name="kb"), "yk")
    net.add_output(net.add_activation(net.add_add(net.add_matmul(x, w[2], name="g"), b[2], name="gb"), "relu",
                                      name="ga"), "yg")
    net.add_output(net.add_add(net.add_matmul(z, w[3], name="o"), b[3], name="ob"), "yo")
    xv, zv = rand(6, 16), rand(6, 16)
    x64, z64 = xv.astype(np.float64), zv.astype(np.float64)
    optimized = check(net, {"x": xv, "z": zv}, {"yq": x64 @ w[0] + b[0], "yk": x64 @ w[1] + b[1],
                                                "yg": np.maximum(x64 @ w[2] + b[2], 0.0), "yo": z64 @ w[3] + b[3]})
    assert sorted(layer.name for layer in optimized.layers) == ["g+gb+ga", "o+ob", "q+qb+k+kb"]


@pytest.mark.parametrize("isa", ISAS)
def test_reshaped_projections_share_the_packed_weights(isa: str) -> None:
    w = [rand(20, 32) for _ in range(3)]
    b = [rand(32) for _ in range(3)]
    for array in w + b:
        array.setflags(write=False)

    def net_of(seq: int) -> Network:
        net = Network("qkv")
        x = net.add_input("x", (1, seq, 20))
        for g in range(3):
            y = net.add_matmul(x, net.add_shared_constant(w[g], f"cw{g}"), name=f"m{g}")
            net.add_output(net.add_add(y, net.add_shared_constant(b[g], f"cb{g}"), name=f"b{g}"), f"y{g}")
        return net

    with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": 2, "isa": isa}}) as rt:
        first = rt.load_network(plugnn.optimize(net_of(7), rt, ["CpuAcc"]))
        packed = int(rt.backend("CpuAcc").get_option("packed_weight_bytes"))
        assert packed > 0
        second_opt = plugnn.optimize(net_of(31), rt, ["CpuAcc"])
        second = rt.load_network(second_opt, reshape_from=[first])
        assert [n.name for n in second_opt.layers] == ["m0+b0+m1+b1+m2+b2"]
        assert second.reshaped_layers == ["m0+b0+m1+b1+m2+b2"]
        assert int(rt.backend("CpuAcc").get_option("packed_weight_bytes")) == packed
        first.unload()
        xv = rand(1, 31, 20)
        got = second.run({"x": xv})
        for g in range(3):
            assert_close(got[f"y{g}"], xv.astype(np.float64) @ w[g] + b[g])
        second.unload()


# ---- A result split along its last axis (GPT-2's c_attn into query, key and value) ----------------


@pytest.mark.parametrize("head,sizes,tail,axis", [
    ("gemm", (64, 64, 64), "none", -1),        # GPT-2: pieces of whole panels, stored in place
    ("gemm", (20, 36, 8), "residual", 2),       # widths off the panels: through the workspace
    ("matmul", (32, 96), "relu", -1),
    ("matmul", (48, 0, 16), "none", -1),        # an empty piece
])
def test_a_split_result_becomes_the_layers_outputs(head: str, sizes: tuple[int, ...], tail: str, axis: int) -> None:
    s, e, f = 13, 24, sum(sizes)
    net = Network("c_attn")
    x = net.add_input("x", (1, s, e))
    w, c = rand(e, f, scale=0.2), rand(f)
    inputs = {"x": rand(1, s, e)}
    ref = inputs["x"].astype(np.float64) @ w.astype(np.float64) + c
    if head == "gemm":
        a = net.add_reshape(x, (s, e), name="c/r0")
        y = net.add_reshape(net.add_fully_connected(a, w, c, name="c/gemm"), (1, s, f), name="c/r1")
        names = ["c/r0", "c/gemm", "c/r1"]
    else:
        y = net.add_add(net.add_matmul(x, w, name="c/mm"), c, name="c/bias")
        names = ["c/mm", "c/bias"]
    if tail == "residual":
        inputs["r"] = rand(1, s, f)
        y = net.add_add(y, net.add_input("r", (1, s, f)), name="c/res")
        ref = ref + inputs["r"]
        names.append("c/res")
    elif tail == "relu":
        y = net.add_activation(y, "relu", name="c/act")
        ref = np.maximum(ref, 0.0)
        names.append("c/act")
    pieces = net.add_split(y, sizes, axis=axis, name="c/split")
    names.append("c/split")
    expected = {}
    for q, (piece, want) in enumerate(zip(pieces, np.split(ref, np.cumsum(sizes)[:-1], axis=-1))):
        net.add_output(piece, f"y{q}")
        expected[f"y{q}"] = want
    optimized = check(net, inputs, expected)
    ((kind, backend),) = plan(optimized)
    assert backend == "CpuAcc" and kind.endswith(f", split in {len(sizes)})"), kind
    assert list(optimized.layers[0].replaces) == names


def test_a_split_along_another_axis_or_after_a_norm_stays_apart() -> None:
    """A Split of rows is not pieces of columns; a normalization needs the whole rows first."""
    net = Network("split_rows")
    x = net.add_input("x", (6, 16))
    w, c = rand(16, 32), rand(32)
    y = net.add_add(net.add_matmul(x, w, name="mm"), c, name="bias")
    for q, piece in enumerate(net.add_split(y, (2, 4), axis=0, name="split")):
        net.add_output(piece, f"y{q}")
    xv = rand(6, 16)
    ref = xv.astype(np.float64) @ w + c
    optimized = check(net, {"x": xv}, {"y0": ref[:2], "y1": ref[2:]})
    assert [layer.name for layer in optimized.layers] == ["mm+bias", "split"]

    net = Network("split_after_norm")
    x = net.add_input("x", (6, 16))
    y = net.add_add(net.add_matmul(x, w, name="mm"), c, name="bias")
    y = net.add_normalization("layer", y, np.ones(32, F32), np.zeros(32, F32), axis=-1, epsilon=1e-5, name="ln")
    for q, piece in enumerate(net.add_split(y, (16, 16), axis=-1, name="split")):
        net.add_output(piece, f"y{q}")
    mean = ref.mean(axis=-1, keepdims=True)
    normed = (ref - mean) / np.sqrt(((ref - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    optimized = check(net, {"x": xv}, {"y0": normed[:, :16], "y1": normed[:, 16:]})
    assert [layer.name for layer in optimized.layers] == ["mm+bias+ln", "split"]
