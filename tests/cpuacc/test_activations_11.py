"""The activation kinds of ABI 1.1 on CpuAcc (GELU, GELU_TANH, SWISH, MISH, SOFTPLUS, SOFTSIGN,
SELU, CELU, THRESHOLDED_RELU, SHRINK, SCALED_TANH): as ACTIVATION layers, fused into
convolutions (the GEMM, direct blocked, depthwise and NHWC paths), fully connected and binary
layers, inside blocked chains where the chain can keep them (the kind maps 0 to 0), streamed
(non-temporal outputs), on every kernel set (option isa) at 1, 2 and 3 threads (and 7 for the
layers), with NaN, infinities and signed zeros in the data and lengths that are no multiple of
any vector width.

Oracle: each formula of backend_api.h in float64 NumPy / math (GELU through erfc and GELU_TANH
through the equal sigmoid(2 w), so the float64 oracle keeps its relative accuracy in the negative
tails), alpha and beta as float32. Tolerances: a layer alone, rtol 2e-6 and atol 1e-37 (the
kernels are within 8 ulp: tests/cpuacc/test_vector_math.py); a fused layer, max|a - b| <= 1e-4 *
max(1, max|b|) (float32 sums of products against float64 ones), the same as test_fusion.py.
Results do not depend on the thread count (checked bit for bit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
import numpy as np
import pytest

import plugnn
from plugnn import Network, NetworkError
from plugnn.descriptors import ActivationDescriptor, ActivationKind, LayerKind
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER, check_every_config

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")
needs_avx512 = pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")

ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1]
LAYER_RTOL, LAYER_ATOL = 2e-6, 1e-37
FUSED_TOLERANCE = 1e-4
RNG = np.random.default_rng(1101)


def f32(v: float) -> float:
    return float(np.float32(v))


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erfc, 1, 1)(x).astype(np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


_C = math.sqrt(2.0 / math.pi)

# kind name: the formula of backend_api.h in float64 (x float64, a and b the float32 alpha, beta)
FORMULAS: dict[ActivationKind, Callable[[np.ndarray, float, float], np.ndarray]] = {
    ActivationKind.GELU: lambda x, a, b: x * 0.5 * _erfc(-x / math.sqrt(2.0)),
    ActivationKind.GELU_TANH: lambda x, a, b: x * _sigmoid(2.0 * _C * (x + 0.044715 * x**3)),
    ActivationKind.SWISH: lambda x, a, b: x * _sigmoid(a * x),
    ActivationKind.MISH: lambda x, a, b: x * np.tanh(np.logaddexp(0.0, x)),
    ActivationKind.SOFTPLUS: lambda x, a, b: np.logaddexp(0.0, x),
    ActivationKind.SOFTSIGN: lambda x, a, b: x / (1.0 + np.abs(x)),
    ActivationKind.SELU: lambda x, a, b: b * np.where(x > 0, x, a * np.expm1(x)),
    ActivationKind.CELU: lambda x, a, b: np.maximum(0.0, x) + np.minimum(0.0, a * np.expm1(x / a)),
    ActivationKind.THRESHOLDED_RELU: lambda x, a, b: np.where(x > a, x, 0.0),
    ActivationKind.SHRINK: lambda x, a, b: np.where(x < -a, x + b, np.where(x > a, x - b, 0.0)),
    ActivationKind.SCALED_TANH: lambda x, a, b: a * np.tanh(b * x),
    ActivationKind.RELU: lambda x, a, b: np.maximum(x, 0.0),
}

# the kinds with the parameters models use, and a few more
ACTIVATIONS: dict[str, ActivationDescriptor] = {
    "gelu": ActivationDescriptor("gelu"),
    "gelu_tanh": ActivationDescriptor("gelu_tanh"),
    "silu": ActivationDescriptor("swish", alpha=1.0),
    "swish_1.702": ActivationDescriptor("swish", alpha=1.702),
    "mish": ActivationDescriptor("mish"),
    "softplus": ActivationDescriptor("softplus"),
    "softsign": ActivationDescriptor("softsign"),
    "selu": ActivationDescriptor("selu", alpha=1.67326319217681884765625, beta=1.05070102214813232421875),
    "celu": ActivationDescriptor("celu", alpha=1.0),
    "celu_0.5": ActivationDescriptor("celu", alpha=0.5),
    "celu_negative_alpha": ActivationDescriptor("celu", alpha=-2.0),
    "thresholded_relu": ActivationDescriptor("thresholded_relu", alpha=1.0),
    "thresholded_relu_negative": ActivationDescriptor("thresholded_relu", alpha=-0.5),
    "hardshrink": ActivationDescriptor("shrink", alpha=0.5, beta=0.0),
    "softshrink": ActivationDescriptor("shrink", alpha=0.5, beta=0.5),
    "shrink_negative_lambda": ActivationDescriptor("shrink", alpha=-0.25, beta=0.1),
    "scaled_tanh": ActivationDescriptor("scaled_tanh", alpha=1.7159, beta=0.6666667),
}
NEW_KINDS = set(ActivationKind) - {ActivationKind(k) for k in range(1, 13)}


def reference(act: ActivationDescriptor, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return FORMULAS[act.kind](np.asarray(x, np.float64), f32(act.alpha), f32(act.beta))


def reference32(act: ActivationDescriptor, x: np.ndarray) -> np.ndarray:
    """The float64 result rounded to float32 (beyond the float32 range: infinity)."""
    with np.errstate(over="ignore"):
        return reference(act, x).astype(np.float32)


def maps_zero_to_zero(act: ActivationDescriptor) -> bool:
    return float(reference(act, np.zeros(1))[0]) == 0.0


def test_every_1_1_kind_is_covered() -> None:
    assert {a.kind for a in ACTIVATIONS.values()} == NEW_KINDS


def data(shape: tuple[int, ...], special: bool = True) -> np.ndarray:
    """Standard normal * 4, a quarter of it spread over [-40, 40], and (special) NaN, +-inf, +-0,
    the largest floats and a subnormal at scattered places."""
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[::4] = RNG.uniform(-40, 40, flat[::4].size).astype(np.float32)
    if special:
        values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -3.4e38, 1e-40], np.float32)
        flat[3::11] = values[np.arange(flat[3::11].size) % values.size]
    return x


# ---- as ACTIVATION layers ------------------------------------------------------------------------

SHAPES = [(1,), (7,), (3, 17), (2, 3, 37, 5), (70001,)]  # the last: split over the threads


def activation_spec(act: ActivationDescriptor, shape: tuple[int, ...], name: str) -> LayerSpec:
    info = TensorInfo(shape, DataType.FLOAT32)
    return LayerSpec(LayerKind.ACTIVATION, name, act, [info], [info])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_layer(runtimes: dict[tuple[str, int], plugnn.Runtime], name: str,
                          shape: tuple[int, ...]) -> None:
    act = ACTIVATIONS[name]
    x = data(shape)
    spec = activation_spec(act, shape, f"{name}{list(shape)}")
    check_every_config(runtimes, spec, [x], reference32(act, x), rtol=LAYER_RTOL, atol=LAYER_ATOL)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_streamed_activation_and_binary_layers(name: str) -> None:
    """Option nontemporal_bytes=0: every layer stores its output non-temporally (through the
    256-float block of binary_row_stream for these kinds); the same results."""
    act = ACTIVATIONS[name]
    net = Network("stream")
    a = net.add_input("a", (3, 1001))
    b = net.add_input("b", (3, 1001))
    net.add_output(net.add_activation(a, act.kind, act.alpha, act.beta, name="act"), "y")
    net.add_output(net.add_activation(net.add_add(a, b, name="add"), act.kind, act.alpha, act.beta, name="act2"), "z")
    inputs = {"a": data((3, 1001)), "b": data((3, 1001), special=False)}
    for isa in ISAS:
        options = {"num_threads": "2", "isa": isa, "nontemporal_bytes": "0", "flush_denormals": "0"}
        with plugnn.Runtime(backend_options={"CpuAcc": options}) as rt:
            optimized = plugnn.optimize(net, rt, ["CpuAcc"])
            assert [r["layer"] for r in optimized.assignments()] == ["act", "add+act2"]
            with rt.load_network(optimized) as loaded:
                out = loaded.run(inputs)
        np.testing.assert_allclose(out["y"], reference32(act, inputs["a"]), rtol=LAYER_RTOL, atol=LAYER_ATOL,
                                   err_msg=f"{name} on {isa}")
        s = inputs["a"].astype(np.float64) + inputs["b"]
        np.testing.assert_allclose(out["z"], reference32(act, s.astype(np.float32)), rtol=LAYER_RTOL,
                                   atol=LAYER_ATOL, err_msg=f"{name} fused into add on {isa}")


def test_celu_with_alpha_zero_is_malformed_for_every_backend() -> None:
    """CELU divides by alpha: alpha 0 is refused by the shared validation (one reason from every
    backend) and by the network builder."""
    act = ActivationDescriptor("celu", alpha=0.0)
    with plugnn.Runtime() as rt:
        reasons = {b: rt.backend(b).is_layer_supported(activation_spec(act, (4,), "celu0")) for b in rt.backend_ids}
    assert all(not r.supported for r in reasons.values())
    assert {r.reason for r in reasons.values()} == {"Activation: CELU needs alpha != 0 (it divides by alpha)"}
    net = Network("celu0")
    x = net.add_input("x", (2, 3))
    with pytest.raises(NetworkError, match="celu needs alpha != 0"):
        net.add_activation(x, "celu", 0.0, name="celu")


# ---- fused into convolution, fully connected and binary layers -----------------------------


def conv2d_nchw(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int, groups: int = 1) -> np.ndarray:
    """float64 NCHW convolution, stride 1."""
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))  # n c oh ow kh kw
    og = o // groups
    out = np.concatenate([np.einsum("nchwij,ocij->nohw", win[:, g * cg:(g + 1) * cg],
                                    np.asarray(w[g * og:(g + 1) * og], np.float64)) for g in range(groups)], axis=1)
    return out + np.asarray(b, np.float64)[None, :, None, None]


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


class Fused:
    """A network with one branch per fusion path, each head followed by `act`, and its float64
    oracle: conv 3x3 NCHW with 16 outputs (the direct blocked kernel on AVX-512, the GEMM
    otherwise) and with 7 (the GEMM), depthwise 3x3 NCHW, conv 3x3 NHWC, fully connected with
    bias, and an add."""

    def __init__(self, act: ActivationDescriptor) -> None:
        self.act = act
        net = Network("fused")
        x = net.add_input("x", (2, 5, 9, 11))
        xd = net.add_input("xd", (1, 24, 7, 13))
        a = net.add_input("a", (5, 33))
        b = net.add_input("b", (5, 33))
        self.inputs = {"x": rand(2, 5, 9, 11, scale=2), "xd": rand(1, 24, 7, 13, scale=2), "a": data((5, 33), False),
                       "b": rand(5, 33)}
        self.w16, self.b16 = rand(16, 5, 3, 3, scale=0.5), rand(16)
        self.w7, self.b7 = rand(7, 5, 3, 3, scale=0.5), rand(7)
        self.wd, self.bd = rand(24, 1, 3, 3), rand(24)
        self.wn, self.bn = rand(6, 5, 3, 3, scale=0.5), rand(6)
        self.wf, self.bf = rand(33, 10, scale=0.3), rand(10)
        heads = {
            "conv16": net.add_convolution2d(x, self.w16, self.b16, padding=1, name="conv16"),
            "conv7": net.add_convolution2d(x, self.w7, self.b7, padding=1, name="conv7"),
            "dw": net.add_convolution2d(xd, self.wd, self.bd, padding=1, groups=24, name="dw"),
            "nhwc": net.add_convolution2d(net.add_transpose(x, (0, 2, 3, 1), name="to_nhwc"),
                                          self.wn, self.bn, padding=1, layout="NHWC",
                                          name="nhwc"),
            "fc": net.add_fully_connected(a, self.wf, self.bf, name="fc"),
            "add": net.add_add(a, b, name="add"),
        }
        for head, t in heads.items():
            net.add_output(net.add_activation(t, act.kind, act.alpha, act.beta, name=f"{head}_act"), f"y_{head}")
        self.network = net

    def expected(self) -> dict[str, np.ndarray]:
        i = self.inputs
        pre = {
            "conv16": conv2d_nchw(i["x"], self.w16, self.b16, 1),
            "conv7": conv2d_nchw(i["x"], self.w7, self.b7, 1),
            "dw": conv2d_nchw(i["xd"], self.wd, self.bd, 1, groups=24),
            "nhwc": conv2d_nchw(i["x"], self.wn, self.bn, 1).transpose(0, 2, 3, 1),
            "fc": i["a"].astype(np.float64) @ self.wf + self.bf,
            "add": i["a"].astype(np.float64) + i["b"],
        }
        return {k: reference(self.act, v) for k, v in pre.items()}


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, what
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=f"{what}: NaN pattern")
    ok = ~np.isnan(expected)
    scale = max(1.0, float(np.max(np.abs(expected[ok])))) if ok.any() else 1.0
    err = float(np.max(np.abs(actual[ok].astype(np.float64) - expected[ok]))) if ok.any() else 0.0
    assert err <= FUSED_TOLERANCE * scale, f"{what}: max|diff| {err:g} > {FUSED_TOLERANCE:g} * {scale:g}"


@pytest.fixture(scope="module")
def fused_runtimes() -> Iterator[dict[tuple[str, int], plugnn.Runtime]]:
    rts = {(isa, n): plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa,
                                                                "blocked_chains": "0", "flush_denormals": "0"}})
           for isa in ISAS for n in (1, 2, 3)}
    yield rts
    for rt in rts.values():
        rt.close()


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_fused_into_convolution_fully_connected_and_binary_layers(
        fused_runtimes: Mapping[tuple[str, int], plugnn.Runtime], name: str) -> None:
    case = Fused(ACTIVATIONS[name])
    expected = case.expected()
    first: dict[str, dict[str, np.ndarray]] = {}
    for (isa, n), rt in fused_runtimes.items():
        optimized = plugnn.optimize(case.network, rt, ["CpuAcc"])
        placed = [r["layer"] for r in optimized.assignments()]
        for head in ("conv16", "conv7", "dw", "nhwc", "fc", "add"):
            assert f"{head}+{head}_act" in placed, f"{name}: {head} did not take the activation: {placed}"
        with rt.load_network(optimized) as loaded:
            out = {k: v.copy() for k, v in loaded.run(case.inputs).items()}
        if isa not in first:
            first[isa] = out
            for head, want in expected.items():
                assert_close(out[f"y_{head}"], want, f"{name} fused into {head} on {isa}")
        else:
            for head in expected:
                np.testing.assert_array_equal(out[f"y_{head}"], first[isa][f"y_{head}"],
                                              err_msg=f"{name} fused into {head} on {isa}: {n} threads")


# ---- in blocked chains ---------------------------------------------------------------------------


def chain_net(act: ActivationDescriptor) -> tuple[Network, dict[str, np.ndarray], Callable[[], np.ndarray]]:
    """conv 3x3 (24 -> 24) -> act -> depthwise 3x3 -> act -> conv 1x1 (24 -> 20) -> y: 24 and
    20 channels leave lanes of their second 16-channel block empty."""
    net = Network("chain")
    x = net.add_input("x", (2, 24, 9, 10))
    w1, b1 = rand(24, 24, 3, 3, scale=1 / 8), rand(24)
    wd, bd = rand(24, 1, 3, 3, scale=0.5), rand(24)
    w2, b2 = rand(20, 24, 1, 1, scale=0.3), rand(20)
    h = net.add_activation(net.add_convolution2d(x, w1, b1, padding=1, name="c1"), act.kind, act.alpha, act.beta,
                           name="a1")
    h = net.add_activation(net.add_convolution2d(h, wd, bd, padding=1, groups=24, name="dw"), act.kind, act.alpha,
                           act.beta, name="a2")
    net.add_output(net.add_convolution2d(h, w2, b2, name="c2"), "y")
    inputs = {"x": rand(2, 24, 9, 10, scale=0.5)}

    def expected() -> np.ndarray:
        h = reference(act, conv2d_nchw(inputs["x"], w1, b1, 1))
        h = reference(act, conv2d_nchw(h, wd, bd, 1, groups=24))
        return conv2d_nchw(h, w2, b2, 0)

    return net, inputs, expected


@needs_avx512
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_blocked_chains_take_every_activation(name: str) -> None:
    act = ACTIVATIONS[name]
    net, inputs, expected = chain_net(act)
    want = expected()
    first = None
    for n in (1, 2, 3):
        with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n}}) as rt:
            optimized = plugnn.optimize(net, rt, ["CpuAcc"])
            chains = [layer for layer in optimized.layers if layer.kind is LayerKind.PRECOMPILED]
            # every kind: where f(0) != 0 the chain zeros the empty lanes of its last block again
            assert [c.replaces for c in chains] == [("c1", "a1", "dw", "a2", "c2")], name
            with rt.load_network(optimized) as loaded:
                y = loaded.run(inputs)["y"].copy()
        if first is None:
            first = y
            assert_close(y, want, f"{name} in a blocked chain")
        else:
            np.testing.assert_array_equal(y, first, err_msg=f"{name} in a blocked chain: {n} threads")


def test_which_kinds_map_zero_to_zero() -> None:
    """Which kinds fill the empty lanes of a blocked chain's last block (the chain zeros them
    again after those: the chain test above runs both sets)."""
    keeps = {name for name, act in ACTIVATIONS.items() if maps_zero_to_zero(act)}
    assert keeps == set(ACTIVATIONS) - {"softplus", "shrink_negative_lambda"}


def test_formula_edge_values_of_the_oracle_match_the_header() -> None:
    """The few infinities where the formula is -inf * 0 (NaN) and the saturations: what the
    kernels are held to above."""
    x = np.array([-np.inf, np.inf, -0.0, 0.0])
    gelu = reference(ActivationDescriptor("gelu"), x)
    assert np.isnan(gelu[0]) and gelu[1] == np.inf and gelu[2] == 0.0 and gelu[3] == 0.0
    softsign = reference(ActivationDescriptor("softsign"), x)
    assert np.isnan(softsign[0]) and np.isnan(softsign[1])
    softplus = reference(ActivationDescriptor("softplus"), x)
    assert softplus[0] == 0.0 and softplus[1] == np.inf and softplus[3] == math.log(2.0)
