"""CpuAcc's pattern fusion (plugins/accel/src/opt/patterns.h): the GELU decompositions (erf and
tanh), SiLU and hard swish, LayerNorm's opset-13 decomposition, RMS normalization's (T5, Llama) and
attention, each recognized
by structure and constants (layer names are never looked at: every test names its layers
arbitrarily), replaced by one layer that explain() shows with what it stands for; left alone
when a piece does not fit (an intermediate used elsewhere, a constant that is not the
pattern's, a scale given at run time, another softmax axis, reductions over other axes); and
computing what the unfused layers compute on CpuAcc (option fuse=0) and on CpuRef.

Tolerance: max|a - b| <= 1e-4 * max(1, max|b|), as tests/cpuacc/test_fusion.py (float32
products summed in other orders; the fused softmax divides the product with V by the row sum
instead of each probability)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
RNG = np.random.default_rng(1917)
F32 = np.float32


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(F32)


def runtime(fuse: bool = True, num_threads: int = 2, isa: str = "auto", chains: bool = False) -> plugnn.Runtime:
    return plugnn.Runtime(backend_options={"CpuAcc": {"fuse": "1" if fuse else "0", "num_threads": num_threads,
                                                      "isa": isa, "blocked_chains": "1" if chains else "0"}})


def plan(optimized: Any) -> list[tuple[str, str]]:
    """(type, backend) of every layer that runs (a PRECOMPILED layer's type without its label)."""
    return [(r["type"].split("(")[0], r["backend"]) for r in optimized.assignments()]


def assert_close(actual: np.ndarray, expected: np.ndarray, tol: float = TOLERANCE) -> None:
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    err = float(np.max(np.abs(actual.astype(np.float64) - expected))) if expected.size else 0.0
    assert err <= tol * scale, f"max|diff| {err:g} > {tol:g} * {scale:g}"


def run(net: Network, rt: plugnn.Runtime, backends: Sequence[str], inputs: Mapping[str, np.ndarray]
        ) -> tuple[Any, dict[str, np.ndarray]]:
    optimized = plugnn.optimize(net, rt, list(backends))
    with rt.load_network(optimized) as loaded:
        return optimized, loaded.run(dict(inputs))


def fused_plan(net: Network, inputs: Mapping[str, np.ndarray], chains: bool = False) -> Any:
    """Runs `net` fused on CpuAcc (every kernel set, every thread count, the same bits at each
    thread count), unfused on CpuAcc and on CpuRef; checks they agree; returns the fused plan."""
    with runtime(fuse=False) as rt:
        _, unfused = run(net, rt, ["CpuAcc", "CpuRef"], inputs)
        _, ref = run(net, rt, ["CpuRef"], inputs)
    optimized = None
    for isa in ISAS:
        first: dict[str, np.ndarray] | None = None
        for n in THREADS:
            with runtime(fuse=True, num_threads=n, isa=isa, chains=chains) as rt:
                optimized, out = run(net, rt, ["CpuAcc", "CpuRef"], inputs)
            if first is None:
                first = out
                for name in out:
                    assert_close(out[name], unfused[name].astype(np.float64))
                    assert_close(out[name], ref[name].astype(np.float64))
            else:
                for name in out:
                    np.testing.assert_array_equal(out[name], first[name], err_msg=f"isa={isa} threads={n}")
    return optimized


def unfused_plan(net: Network) -> list[tuple[str, str]]:
    with runtime() as rt:
        return plan(plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"]))


# ---- GELU (erf) ------------------------------------------------------------------------------------


def gelu_erf(net: Network, x: Tensor, div: str = "div", order: str = "x*p*h", half: float = 0.5,
             root: float = math.sqrt(2.0), erf_name: str = "q7") -> Tensor:
    """x * 0.5 * (1 + erf(x / sqrt 2)) as exporters write it; `order` picks the association."""
    if div == "div":
        d = net.add_div(x, F32(root), name="a1")
    elif div == "mul":
        d = net.add_mul(x, F32(1.0 / root), name="a1")
    elif div == "mul_left":
        d = net.add_mul(F32(1.0 / root), x, name="a1")
    else:  # a scale given at run time
        d = net.add_div(x, net.add_input("s", ()), name="a1")
    e = net.add_unary("erf", d, name=erf_name)
    p = net.add_add(e, F32(1.0), name="a3") if order != "1+e" else net.add_add(F32(1.0), e, name="a3")
    h = F32(half)
    if order in ("x*p*h", "1+e"):
        return net.add_mul(net.add_mul(x, p, name="a4"), h, name="a5")
    if order == "x*h*p":
        return net.add_mul(net.add_mul(x, h, name="a4"), p, name="a5")
    if order == "h*x*p":
        return net.add_mul(net.add_mul(h, x, name="a4"), p, name="a5")
    return net.add_mul(p, net.add_mul(h, x, name="a4"), name="a5")  # "p*(h*x)"


@pytest.mark.parametrize("div", ["div", "mul", "mul_left"])
@pytest.mark.parametrize("order", ["x*p*h", "x*h*p", "h*x*p", "p*(h*x)", "1+e"])
def test_gelu_erf_becomes_one_activation(div: str, order: str) -> None:
    net = Network("gelu")
    x = net.add_input("x", (3, 77))
    net.add_output(gelu_erf(net, x, div, order), "y")
    optimized = fused_plan(net, {"x": rand(3, 77, scale=3.0)})
    assert plan(optimized) == [("Activation", "CpuAcc")]
    text = optimized.explain()
    assert "a1+q7+a3+a4+a5 (Activation) -> CpuAcc" in text, text
    assert "stands for: a1, q7, a3, a4, a5" in text
    assert "substituted 'a1', 'q7', 'a3', 'a4', 'a5' by one Activation" in text
    (layer,) = optimized.layers
    assert layer.descriptor.kind.name == "GELU"


def test_gelu_erf_fuses_into_the_bias_add_before_it() -> None:
    """BERT's intermediate layer: MatMul, Add of the bias, GELU -> MatMul, Add with fused GELU
    (weights given at run time: with constant weights the three are one fused linear layer,
    tests/cpuacc/test_fusion_linear.py)."""
    net = Network("ffn")
    x = net.add_input("x", (2, 9, 16))
    w = net.add_input("w", (16, 40))
    h = net.add_add(net.add_matmul(x, w, name="mm"), rand(40), name="bias")
    net.add_output(gelu_erf(net, h), "y")
    optimized = fused_plan(net, {"x": rand(2, 9, 16), "w": rand(16, 40, scale=0.3)})
    assert plan(optimized) == [("Matmul", "CpuAcc"), ("ElementwiseBinary", "CpuAcc")]
    fused = optimized.layers[1]
    assert fused.name == "bias+a1+q7+a3+a4+a5"
    assert fused.descriptor.fused_activation.kind.name == "GELU"
    assert "stands for: bias, a1, q7, a3, a4, a5" in optimized.explain()


@pytest.mark.parametrize("broken", ["erf used elsewhere", "not sqrt 2", "not one half", "scale at run time",
                                    "x broadcast larger"])
def test_gelu_erf_is_left_alone_when_a_piece_does_not_fit(broken: str) -> None:
    net = Network("not_gelu")
    x = net.add_input("x", (3, 77) if broken != "x broadcast larger" else (1, 77))
    inputs = {"x": rand(*x.shape)}
    if broken == "erf used elsewhere":
        y = gelu_erf(net, x)
        net.add_output(next(t for t in net_tensors(net) if t.producer == "q7"), "erf")
    elif broken == "not sqrt 2":
        y = gelu_erf(net, x, root=1.5)
    elif broken == "not one half":
        y = gelu_erf(net, x, half=0.6)
    elif broken == "scale at run time":
        y = gelu_erf(net, x, div="runtime")
        inputs["s"] = np.array(math.sqrt(2.0), F32)
    else:  # the 0.5 factor broadcasts x to [3, 77]
        d = net.add_div(x, F32(math.sqrt(2.0)), name="a1")
        p = net.add_add(net.add_unary("erf", d, name="q7"), F32(1.0), name="a3")
        y = net.add_mul(net.add_mul(x, p, name="a4"), np.full((3, 1), 0.5, F32), name="a5")
    net.add_output(y, "y")
    optimized = fused_plan(net, inputs)
    assert ("ElementwiseUnary", "CpuAcc") in plan(optimized)
    assert "(Activation)" not in optimized.explain()


def net_tensors(net: Network) -> list[Tensor]:
    return [Tensor(net, layer.name, 0, layer.outputs[0]) for layer in net.layers if layer.outputs]


# ---- GELU (tanh) ----------------------------------------------------------------------------------


def gelu_tanh(net: Network, x: Tensor, cube: str = "pow", k2: float = 0.044715) -> Tensor:
    """GPT-2's NewGELU: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))."""
    half = net.add_mul(F32(0.5), x, name="b1")
    if cube == "pow":
        c = net.add_elementwise("power", x, F32(3.0), name="b2")
    elif cube == "x*(x*x)":
        c = net.add_mul(x, net.add_mul(x, x, name="b2a"), name="b2")
    else:
        c = net.add_mul(net.add_mul(x, x, name="b2a"), x, name="b2")
    s = net.add_add(x, net.add_mul(F32(k2), c, name="b3"), name="b4")
    t = net.add_activation(net.add_mul(F32(math.sqrt(2.0 / math.pi)), s, name="b5"), "tanh", name="b6")
    return net.add_mul(half, net.add_add(F32(1.0), t, name="b7"), name="b8")


@pytest.mark.parametrize("cube", ["pow", "x*(x*x)", "(x*x)*x"])
def test_gelu_tanh_becomes_one_activation(cube: str) -> None:
    net = Network("new_gelu")
    x = net.add_input("x", (4, 65))
    net.add_output(gelu_tanh(net, x, cube), "y")
    optimized = fused_plan(net, {"x": rand(4, 65, scale=3.0)})
    assert plan(optimized) == [("Activation", "CpuAcc")]
    assert optimized.layers[0].descriptor.kind.name == "GELU_TANH"
    assert "stands for: b1, b2" in optimized.explain()


def test_gelu_tanh_with_another_coefficient_is_left_alone() -> None:
    net = Network("not_new_gelu")
    x = net.add_input("x", (4, 65))
    net.add_output(gelu_tanh(net, x, k2=0.05), "y")
    optimized = fused_plan(net, {"x": rand(4, 65)})
    # eight layers, the tanh fused into the Mul before it (layer fusion): seven, none GELU_TANH
    assert plan(optimized) == [("ElementwiseBinary", "CpuAcc")] * 7
    assert "GELU_TANH" not in repr([layer.descriptor for layer in optimized.layers])


# ---- SiLU and hard swish ---------------------------------------------------------------------------


@pytest.mark.parametrize("gate, alpha, beta, kind", [("sigmoid", 0.0, 0.0, "SWISH"),
                                                     ("hard_sigmoid", 1.0 / 6.0, 0.5, "HARD_SWISH")])
@pytest.mark.parametrize("x_first", [True, False])
@pytest.mark.parametrize("chains", [False, True])
def test_silu_and_hard_swish_fuse_into_the_convolution(gate: str, alpha: float, beta: float, kind: str,
                                                       x_first: bool, chains: bool) -> None:
    net = Network("silu")
    x = net.add_input("x", (1, 16, 11, 13))
    y = net.add_convolution2d(x, rand(32, 16, 3, 3, scale=0.2), rand(32), padding=1, name="c1")
    g = net.add_activation(y, gate, alpha, beta, name="g1")
    y = net.add_mul(y, g, name="m1") if x_first else net.add_mul(g, y, name="m1")
    y = net.add_convolution2d(y, rand(32, 32, 3, 3, scale=0.1), padding=1, name="c2")
    net.add_output(y, "y")
    optimized = fused_plan(net, {"x": rand(1, 16, 11, 13)}, chains=chains)
    if chains and BEST_ISA == "avx512":  # one blocked chain of both convolutions, SWISH inside
        assert plan(optimized) == [("Precompiled", "CpuAcc")]
        assert sorted(optimized.layers[0].replaces) == ["c1", "c2", "g1", "m1"]
    else:
        assert plan(optimized) == [("Convolution2d", "CpuAcc"), ("Convolution2d", "CpuAcc")]
        assert optimized.layers[0].name == "c1+g1+m1"
        assert optimized.layers[0].descriptor.fused_activation.kind.name == kind
        assert "stands for: c1, g1, m1" in optimized.explain()


@pytest.mark.parametrize("broken", ["gate of another tensor", "gate used elsewhere", "other hard sigmoid"])
def test_swish_is_left_alone_when_a_piece_does_not_fit(broken: str) -> None:
    net = Network("not_silu")
    x = net.add_input("x", (2, 40))
    other = net.add_input("z", (2, 40))
    if broken == "other hard sigmoid":
        g = net.add_activation(x, "hard_sigmoid", 0.2, 0.5, name="g1")
    else:
        g = net.add_activation(other if broken == "gate of another tensor" else x, "sigmoid", name="g1")
    net.add_output(net.add_mul(x, g, name="m1"), "y")
    if broken == "gate used elsewhere":
        net.add_output(g, "gate")
    optimized = fused_plan(net, {"x": rand(2, 40), "z": rand(2, 40)})
    assert plan(optimized) == [("Activation", "CpuAcc"), ("ElementwiseBinary", "CpuAcc")]


# ---- LayerNorm --------------------------------------------------------------------------------------


def layer_norm(net: Network, x: Tensor, axes: Sequence[int], scale: np.ndarray | None, bias: np.ndarray | None,
               square: str = "pow", eps: float = 1e-5) -> Tensor:
    m = net.add_reduce("mean", x, axes, keep_dims=True, name="n1")
    d = net.add_sub(x, m, name="n2")
    p = net.add_elementwise("power", d, F32(2.0), name="n3") if square == "pow" else net.add_mul(d, d, name="n3")
    v = net.add_reduce("mean", p, axes, keep_dims=True, name="n4")
    s = net.add_unary("sqrt", net.add_add(v, F32(eps), name="n5"), name="n6")
    y = net.add_div(d, s, name="n7")
    if scale is not None:
        y = net.add_mul(y, scale, name="n8")
    if bias is not None:
        y = net.add_add(bias, y, name="n9")
    return y


@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("axes, shape", [((2,), (2, 9, 64)), ((1, 2), (2, 9, 24)), ((1,), (5, 37))], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_decomposition_becomes_one_normalization(square: str, axes: tuple[int, ...],
                                                            shape: tuple[int, ...], bias: bool) -> None:
    net = Network("ln13")
    x = net.add_input("x", shape)
    inner = shape[axes[0]:]
    y = layer_norm(net, x, axes, rand(*inner) + 1.0, rand(*inner) if bias else None, square)
    net.add_output(y, "y")
    optimized = fused_plan(net, {"x": rand(*shape, scale=4.0) + 3.0})
    assert plan(optimized) == [("Normalization", "CpuAcc")]
    layer = optimized.layers[0]
    assert layer.descriptor.op.name == "LAYER" and layer.descriptor.axis == axes[0]
    assert layer.descriptor.has_bias == bias
    assert "stands for: n1, n2, n3, n4, n5, n6, n7, n8" in optimized.explain()


# ---- RMS normalization (T5, Llama) ----------------------------------------------------------------------


def rms_norm(net: Network, x: Tensor, axes: Sequence[int], scale: np.ndarray | None, square: str = "pow",
             rsqrt: str = "div", order: str = "x*r", eps: float = 1e-6) -> Tensor:
    """x * rsqrt(mean(x^2) + eps) * scale as torch exports T5's and Llama's RMSNorm (rsqrt as
    Div(1, Sqrt)), or with the other forms the matcher takes."""
    p = net.add_elementwise("power", x, F32(2.0), name="r1") if square == "pow" else net.add_mul(x, x, name="r1")
    v = net.add_add(net.add_reduce("mean", p, axes, keep_dims=True, name="r2"), F32(eps), name="r3")
    if rsqrt == "div":
        r = net.add_div(F32(1.0), net.add_unary("sqrt", v, name="r4"), name="r5")
    elif rsqrt == "reciprocal":
        r = net.add_unary("reciprocal", net.add_unary("sqrt", v, name="r4"), name="r5")
    else:
        r = net.add_unary("rsqrt", v, name="r5")
    y = net.add_mul(x, r, name="r6") if order == "x*r" else net.add_mul(r, x, name="r6")
    if scale is not None:
        y = net.add_mul(scale, y, name="r7") if order == "x*r" else net.add_mul(y, scale, name="r7")
    return y


@pytest.mark.parametrize("square, rsqrt, order", [("pow", "div", "x*r"), ("mul", "reciprocal", "r*x"),
                                                  ("pow", "rsqrt", "r*x")])
@pytest.mark.parametrize("axes, shape", [((2,), (1, 7, 128)), ((1, 2), (2, 9, 24)), ((1,), (5, 37))], ids=str)
def test_rms_norm_decomposition_becomes_one_normalization(square: str, rsqrt: str, order: str,
                                                          axes: tuple[int, ...], shape: tuple[int, ...]) -> None:
    net = Network("rms")
    x = net.add_input("x", shape)
    y = rms_norm(net, x, axes, rand(*shape[axes[0]:]) + 1.0, square, rsqrt, order)
    net.add_output(y, "y")
    optimized = fused_plan(net, {"x": rand(*shape, scale=4.0) + 1.0})
    assert plan(optimized) == [("Normalization", "CpuAcc")]
    layer = optimized.layers[0]
    assert layer.descriptor.op.name == "RMS" and layer.descriptor.axis == axes[0]
    assert math.isclose(layer.descriptor.epsilon, 1e-6, rel_tol=1e-6)
    names = "r1, r2, r3, r4, r5, r6, r7" if rsqrt != "rsqrt" else "r1, r2, r3, r5, r6, r7"
    assert f"stands for: {names}" in optimized.explain()


@pytest.mark.parametrize("broken", ["no scale", "another x", "mean used elsewhere", "not trailing axes",
                                    "cube", "scale at run time"])
def test_rms_norm_is_left_alone_when_a_piece_does_not_fit(broken: str) -> None:
    net = Network("not_rms")
    x = net.add_input("x", (2, 9, 16))
    inputs = {"x": rand(2, 9, 16) + 2}
    if broken == "no scale":
        y = rms_norm(net, x, (2,), None)
    elif broken == "another x":  # the product takes another tensor than the squared one
        other = net.add_input("z", (2, 9, 16))
        inputs["z"] = rand(2, 9, 16)
        r = net.add_div(F32(1.0), net.add_unary("sqrt", net.add_add(net.add_reduce(
            "mean", net.add_mul(x, x, name="r1"), (2,), keep_dims=True, name="r2"), F32(1e-6), name="r3"), name="r4"),
            name="r5")
        y = net.add_mul(rand(16) + 1, net.add_mul(other, r, name="r6"), name="r7")
    elif broken == "mean used elsewhere":
        y = rms_norm(net, x, (2,), rand(16) + 1)
        net.add_output(next(t for t in net_tensors(net) if t.producer == "r2"), "mean_square")
    elif broken == "not trailing axes":
        y = rms_norm(net, x, (1,), rand(9, 1) + 1)
    elif broken == "cube":
        p = net.add_elementwise("power", x, F32(3.0), name="r1")
        r = net.add_unary("rsqrt", net.add_add(net.add_reduce("mean", p, (2,), keep_dims=True, name="r2"),
                                               F32(1e-6), name="r3"), name="r5")
        y = net.add_mul(net.add_mul(x, r, name="r6"), rand(16) + 1, name="r7")
    else:
        scale = net.add_input("scale", (16,))
        inputs["scale"] = rand(16) + 1
        y = rms_norm(net, x, (2,), None)
        y = net.add_mul(y, scale, name="r7")
    net.add_output(y, "y")
    optimized = fused_plan(net, inputs)
    if broken == "scale at run time":  # the layer takes a scale given at run time too
        assert plan(optimized) == [("Normalization", "CpuAcc")]
        return
    assert ("Normalization", "CpuAcc") not in plan(optimized)
    assert ("Reduce", "CpuAcc") in plan(optimized)


@pytest.mark.parametrize("broken", ["not trailing axes", "centered used elsewhere", "no scale", "axes differ",
                                    "squared"])
def test_layer_norm_is_left_alone_when_a_piece_does_not_fit(broken: str) -> None:
    net = Network("not_ln")
    x = net.add_input("x", (2, 9, 16))
    if broken == "squared":  # the normalized value times itself: no scale to take (and read twice)
        y = layer_norm(net, x, (2,), None, None)
        y = net.add_mul(y, y, name="n8")
    elif broken == "not trailing axes":
        y = layer_norm(net, x, (1,), rand(9, 1) + 1, rand(9, 1))
    elif broken == "no scale":
        y = layer_norm(net, x, (2,), None, None)
    elif broken == "axes differ":
        m = net.add_reduce("mean", x, (2,), name="n1")
        d = net.add_sub(x, m, name="n2")
        v = net.add_reduce("mean", net.add_mul(d, d, name="n3"), (1, 2), name="n4")
        y = net.add_mul(net.add_div(d, net.add_unary("sqrt", net.add_add(v, F32(1e-5), name="n5"), name="n6"),
                                    name="n7"), rand(16) + 1, name="n8")
    else:
        y = layer_norm(net, x, (2,), rand(16) + 1, rand(16))
        net.add_output(next(t for t in net_tensors(net) if t.producer == "n2"), "centered")
    net.add_output(y, "y")
    optimized = fused_plan(net, {"x": rand(2, 9, 16) + 2})
    assert ("Normalization", "CpuAcc") not in plan(optimized)
    assert ("Reduce", "CpuAcc") in plan(optimized)


# ---- Attention ---------------------------------------------------------------------------------------


def attention(net: Network, x: Tensor, heads: int, depth: int, *, scale: str = "mul", mask: str = "const",
              seq: int = 0, out_proj: bool = True) -> Tensor:
    """A BERT-style self-attention block as torch exports it: projections, Reshape/Transpose into
    heads (K straight to K^T), Q K^T, scale, mask, Softmax, @ V, Transpose/Reshape back."""
    b, s, e = x.shape
    hd = heads * depth

    def heads_of(t: Tensor, perm: tuple[int, ...], name: str) -> Tensor:
        return net.add_transpose(net.add_reshape(t, (b, s, heads, depth), name=name + "_r"), perm, name=name + "_t")

    q = net.add_add(net.add_matmul(x, rand(e, hd, scale=0.3), name="pq"), rand(hd), name="bq")
    k = net.add_add(net.add_matmul(x, rand(e, hd, scale=0.3), name="pk"), rand(hd), name="bk")
    v = net.add_add(net.add_matmul(x, rand(e, hd, scale=0.3), name="pv"), rand(hd), name="bv")
    qh, kt, vh = heads_of(q, (0, 2, 1, 3), "q"), heads_of(k, (0, 2, 3, 1), "k"), heads_of(v, (0, 2, 1, 3), "v")
    if scale == "pre":  # torch's scaled_dot_product_attention export: Q and K^T each scaled
        qh = net.add_mul(qh, F32(depth ** -0.25), name="sq")
        kt = net.add_mul(kt, F32(depth ** -0.25), name="sk")
    scores = net.add_matmul(qh, kt, name="qk")
    if scale == "mul":
        scores = net.add_mul(scores, F32(1.0 / math.sqrt(depth)), name="sc")
    elif scale == "div":
        scores = net.add_div(scores, F32(math.sqrt(depth)), name="sc")
    elif scale == "runtime":
        scores = net.add_mul(scores, net.add_input("scale", ()), name="sc")
    if mask == "const":  # a causal mask, as GPT-2's Where/Trilu builds it
        causal = np.triu(np.full((s, s), np.finfo(np.float32).min, F32), 1)[None, None]
        scores = net.add_add(scores, causal, name="mk")
    elif mask == "runtime":  # BERT's padding mask, [B, 1, 1, S]
        scores = net.add_add(net.add_input("mask", (b, 1, 1, s)), scores, name="mk")
    probs = net.add_softmax(scores, -1 if mask != "axis" else 2, name="sm")
    ctx = net.add_matmul(probs, vh, name="pv2")
    ctx = net.add_reshape(net.add_transpose(ctx, (0, 2, 1, 3), name="ot"), (b, s, hd), name="or")
    if out_proj:
        ctx = net.add_matmul(ctx, rand(hd, e, scale=0.3), name="po")
    return ctx


def attention_count(optimized: Any) -> int:
    """The fused attentions among the layers that run (the projections with their biases are
    PRECOMPILED fused linear layers of their own: tests/cpuacc/test_fusion_linear.py)."""
    return sum(r["type"].startswith("Precompiled(attention") for r in optimized.assignments())


def attention_inputs(net: Network) -> dict[str, np.ndarray]:
    inputs = {}
    for layer in net.inputs:
        shape = layer.outputs[0].shape
        if layer.name == "mask":
            m = np.zeros(shape, F32)
            m[..., -3:] = np.finfo(np.float32).min  # the last three tokens are padding
            inputs["mask"] = m
        elif layer.name == "scale":
            inputs["scale"] = np.array(0.25, F32)
        else:
            inputs[layer.name] = rand(*shape)
    return inputs


@pytest.mark.parametrize("scale", ["mul", "div", "pre", "none"])
@pytest.mark.parametrize("mask", ["const", "runtime", "none"])
def test_attention_becomes_one_precompiled_layer(scale: str, mask: str) -> None:
    net = Network("bert_block")
    x = net.add_input("x", (2, 37, 20))
    net.add_output(attention(net, x, heads=3, depth=24, scale=scale, mask=mask), "y")
    optimized = fused_plan(net, attention_inputs(net))
    kinds = plan(optimized)
    assert attention_count(optimized) == 1
    assert ("Softmax", "CpuAcc") not in kinds and ("Transpose", "CpuAcc") not in kinds
    pre = next(layer for layer in optimized.layers if layer.type_name.startswith("Precompiled(attention"))
    stands = ["q_r", "q_t", "k_r", "k_t"] + (["sq", "sk"] if scale == "pre" else []) + ["v_r", "v_t", "qk"]
    stands += (["sc"] if scale in ("mul", "div") else []) + (["mk"] if mask != "none" else [])
    stands += ["sm", "pv2", "ot", "or"]
    assert sorted(pre.replaces) == sorted(stands)
    text = optimized.explain()
    assert f"- {pre.name} (Precompiled(attention: 2 x 3 batch(es) of [37, 24] x [37, 24]^T" in text, text
    assert f"stands for: {', '.join(pre.replaces)}" in text
    assert pre.descriptor.label.startswith("attention: ")
    assert ("mask" in pre.descriptor.label) == (mask != "none")


def test_attention_shapes_vit_and_single_head() -> None:
    """ViT's 197 tokens (no multiple of any vector width), one head of depth 64, and depth 16."""
    for heads, depth, seq in ((1, 64, 197), (4, 16, 33)):
        net = Network("vit_block")
        x = net.add_input("x", (1, seq, 16))
        net.add_output(attention(net, x, heads=heads, depth=depth, scale="mul", mask="none"), "y")
        optimized = fused_plan(net, attention_inputs(net))
        assert attention_count(optimized) == 1


@pytest.mark.parametrize("broken", ["scores used elsewhere", "probabilities used elsewhere", "scale at run time",
                                    "softmax over another axis"])
def test_attention_is_left_alone_when_a_piece_does_not_fit(broken: str) -> None:
    net = Network("not_attention")
    x = net.add_input("x", (1, 16, 8))
    mask = "axis" if broken == "softmax over another axis" else "const"
    y = attention(net, x, heads=2, depth=8, scale="runtime" if broken == "scale at run time" else "mul",
                  mask=mask)
    net.add_output(y, "y")
    if broken == "scores used elsewhere":
        net.add_output(next(t for t in net_tensors(net) if t.producer == "qk"), "scores")
    elif broken == "probabilities used elsewhere":
        net.add_output(next(t for t in net_tensors(net) if t.producer == "sm"), "probs")
    optimized = fused_plan(net, attention_inputs(net))
    assert attention_count(optimized) == 0
    assert ("Softmax", "CpuAcc") in plan(optimized)


def test_option_fuse_0_keeps_every_pattern_apart() -> None:
    net = Network("all")
    x = net.add_input("x", (1, 16, 8))
    y = attention(net, x, heads=2, depth=8)
    y = layer_norm(net, y, (2,), rand(8) + 1, rand(8))
    net.add_output(gelu_erf(net, y), "y")
    assert ("Precompiled", "CpuAcc") not in unfused_plan_with(net, fuse=False)
    fused = unfused_plan_with(net, fuse=True)
    with runtime(fuse=True) as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
    assert attention_count(optimized) == 1
    # the LayerNorm match joins the output projection before it (tests/cpuacc/test_fusion_linear.py)
    assert any(r["type"].startswith("Precompiled(matmul") and "layer_norm" in r["type"]
               for r in optimized.assignments())
    assert ("Activation", "CpuAcc") in fused


def unfused_plan_with(net: Network, fuse: bool) -> list[tuple[str, str]]:
    with runtime(fuse=fuse) as rt:
        return plan(plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"]))



def window_attention(net: Network, x: Tensor, windows: int, heads: int, depth: int, shift_mask: str) -> Tensor:
    """Swin's (shifted) window attention as torchvision exports it: per window and head, Q K^T
    plus a relative position bias [H, S, S], reshaped to [1, W, H, S, S] to add the shift mask
    [1, W, 1, S, S] (shifted blocks), reshaped back, Softmax, @ V."""
    w, s, _ = x.shape
    q = net.add_transpose(net.add_reshape(net.add_matmul(x, rand(x.shape[2], heads * depth, scale=0.3), name="pq"),
                                          (w, s, heads, depth), name="qr"), (0, 2, 1, 3), name="qt")
    k = net.add_transpose(net.add_reshape(net.add_matmul(x, rand(x.shape[2], heads * depth, scale=0.3), name="pk"),
                                          (w, s, heads, depth), name="kr"), (0, 2, 3, 1), name="kt")
    v = net.add_transpose(net.add_reshape(net.add_matmul(x, rand(x.shape[2], heads * depth, scale=0.3), name="pv"),
                                          (w, s, heads, depth), name="vr"), (0, 2, 1, 3), name="vt")
    scores = net.add_add(net.add_mul(net.add_matmul(q, k, name="qk"), F32(depth ** -0.5), name="sc"),
                         rand(heads, s, s), name="bias")
    if shift_mask != "none":
        mask = (RNG.integers(0, 2, (1, windows, 1, s, s)) * -100.0).astype(F32)
        scores = net.add_reshape(scores, (1, windows, heads, s, s), name="r1")
        m = mask if shift_mask == "const" else net.add_input("shift", mask.shape)
        scores = net.add_reshape(net.add_add(scores, m, name="shift_add"), (windows, heads, s, s), name="r2")
    ctx = net.add_matmul(net.add_softmax(scores, -1, name="sm"), v, name="pv2")
    return net.add_reshape(net.add_transpose(ctx, (0, 2, 1, 3), name="ot"), (w, s, heads * depth), name="or")


@pytest.mark.parametrize("shift_mask", ["none", "const"])
def test_window_attention_with_its_masks_becomes_one_layer(shift_mask: str) -> None:
    net = Network("swin_block")
    x = net.add_input("x", (4, 49, 12))
    net.add_output(window_attention(net, x, windows=4, heads=2, depth=16, shift_mask=shift_mask), "y")
    optimized = fused_plan(net, attention_inputs(net))
    # the attention, and the three projections of x as one GEMM (tests/cpuacc/test_fusion_linear.py)
    assert plan(optimized) == [("Precompiled", "CpuAcc")] * 2 and attention_count(optimized) == 1
    assert any(r["type"].startswith("Precompiled(matmul [*, 12] x [12, 32 | 32 | 32], 3 projections of one input")
               for r in optimized.assignments()), optimized.assignments()
    pre = next(layer for layer in optimized.layers if layer.type_name.startswith("Precompiled(attention"))
    assert {"bias", "sm", "qk"} <= set(pre.replaces)
    if shift_mask == "const":  # the two constant masks summed into one the layer owns
        assert {"r1", "shift_add", "r2"} <= set(pre.replaces)
        assert "constant masks summed" in pre.descriptor.label
        assert len(pre.inputs) == 3


def test_window_attention_with_a_run_time_mask_behind_a_reshape_is_left_alone() -> None:
    net = Network("swin_block_runtime_mask")
    x = net.add_input("x", (4, 49, 12))
    net.add_output(window_attention(net, x, windows=4, heads=2, depth=16, shift_mask="runtime"), "y")
    inputs = attention_inputs(net)
    inputs["shift"] = (RNG.integers(0, 2, (1, 4, 1, 49, 49)) * -100.0).astype(F32)
    optimized = fused_plan(net, inputs)
    assert attention_count(optimized) == 0
    assert ("Softmax", "CpuAcc") in plan(optimized)


@pytest.mark.parametrize("seq", [37, 128])
@pytest.mark.parametrize("case", ["some keys -inf", "a NaN key in a whole vector", "a NaN key in the last lanes",
                                  "every key -inf"])
def test_fused_attention_rows_with_nan_or_all_masked_are_nan(seq: int, case: str) -> None:
    """The row's largest score is found in the score tiles (no pass of its own): a row with a NaN
    score, or whose every score is -inf, is NaN throughout, as the unfused Softmax gives; a row
    with some -inf scores is the unfused result. 37 keys: a partial last vector, whose lanes
    the tiles leave to a scalar pass."""
    net = Network("attn_nan")
    x = net.add_input("x", (1, seq, 20))
    net.add_output(attention(net, x, heads=2, depth=16, scale="div", mask="runtime", out_proj=False), "y")
    inputs = attention_inputs(net)
    mask = np.zeros((1, 1, 1, seq), F32)
    if case == "some keys -inf":
        mask[..., seq // 2:] = -np.inf
    elif case == "every key -inf":
        mask[...] = -np.inf
    else:
        mask[..., 0 if "whole" in case else seq - 1] = np.nan
    inputs["mask"] = mask
    outs = {}
    for fuse in (False, True):
        for isa in ISAS:
            with runtime(fuse=fuse, isa=isa) as rt:
                optimized, out = run(net, rt, ["CpuAcc", "CpuRef"], inputs)
            assert (attention_count(optimized) == 1) == fuse
            outs[(fuse, isa)] = out["y"]
    unfused = outs[(False, ISAS[0])]
    for (fuse, isa), y in outs.items():  # the unfused results themselves included
        if case == "some keys -inf":
            assert not np.isnan(y).any()
            assert_close(y, unfused.astype(np.float64))
        else:
            assert np.isnan(y).all(), f"fuse={fuse} isa={isa}"
