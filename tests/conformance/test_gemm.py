"""FULLY_CONNECTED (ONNX Gemm: y = act(alpha * op(a) @ op(b) + beta * c + addend)) and
MATMUL (NumPy matmul rules). The oracles are NumPy's @ and np.matmul in float64."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import ActivationDescriptor, FullyConnectedDescriptor, LayerKind
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, layer_spec, run_layer, shape_id
from .test_activation import activation_reference


def gemm_reference(desc: FullyConnectedDescriptor, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None,
                   addend: np.ndarray | None = None) -> np.ndarray:
    a = a.astype(np.float64).T if desc.transpose_a else a.astype(np.float64)
    b = b.astype(np.float64).T if desc.transpose_b else b.astype(np.float64)
    y = f32(desc.alpha) * (a @ b)
    if c is not None:
        y = y + f32(desc.beta) * c.astype(np.float64)
    if addend is not None:
        y = y + addend
    return activation_reference(desc.fused_activation, y)


def c_shape(kind: str, m: int, n: int) -> tuple[int, ...] | None:
    return {"none": None, "(N,)": (n,), "(1,N)": (1, n), "(M,N)": (m, n), "(M,1)": (m, 1), "(1,)": (1,),
            "()": ()}[kind]


def gemm_inputs(m: int, k: int, n: int, desc: FullyConnectedDescriptor, c_kind: str, seed: int):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if desc.transpose_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if desc.transpose_b else (k, n)).astype(np.float32)
    shape = c_shape(c_kind, m, n)
    c = None if shape is None else np.asarray(rng.standard_normal(shape), np.float32)
    return a, b, c


@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.5, -2.0)], ids=["a1b1", "a0.5b-2"])
@pytest.mark.parametrize("c_kind", ["none", "(N,)", "(1,N)", "(M,N)", "(M,1)", "(1,)", "()"])
@pytest.mark.parametrize("transpose_b", [False, True], ids=["b", "bT"])
@pytest.mark.parametrize("transpose_a", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("mkn", [(3, 4, 5), (1, 7, 1), (6, 1, 2)], ids=lambda mkn: "mkn{}x{}x{}".format(*mkn))
def test_fully_connected(backend, mkn, transpose_a: bool, transpose_b: bool, c_kind: str, alpha: float,
                         beta: float) -> None:
    m, k, n = mkn
    desc = FullyConnectedDescriptor(transpose_a=transpose_a, transpose_b=transpose_b, alpha=alpha, beta=beta,
                                    has_bias=c_kind != "none")
    a, b, c = gemm_inputs(m, k, n, desc, c_kind, seed=501)
    inputs = [a, b] + ([c] if c is not None else [])
    spec = layer_spec(LayerKind.FULLY_CONNECTED, desc, inputs, (m, n), name=f"gemm c={c_kind}",
                      constants=range(1, len(inputs)))
    (y,) = run_layer(backend, spec, inputs)
    assert_close(y, gemm_reference(desc, a, b, c), RTOL, ATOL, spec)


FUSED = [None, ActivationDescriptor("relu"), ActivationDescriptor("linear", alpha=2.0, beta=1.0),
         ActivationDescriptor("tanh")]


@pytest.mark.parametrize("has_addend", [False, True], ids=["plain", "addend"])
@pytest.mark.parametrize("act", FUSED, ids=lambda act: act.kind.name.lower() if act else "none")
@pytest.mark.parametrize("transpose_b", [False, True], ids=["b", "bT"])
def test_fully_connected_fused_activation_and_addend(backend, transpose_b: bool, act, has_addend: bool) -> None:
    desc = FullyConnectedDescriptor(transpose_b=transpose_b, alpha=0.5, beta=1.5, has_bias=True,
                                    fused_activation=act, has_addend=has_addend)
    a, b, c = gemm_inputs(4, 3, 5, desc, "(N,)", seed=502)
    addend = np.random.default_rng(503).standard_normal((4, 5)).astype(np.float32) if has_addend else None
    inputs = [a, b, c] + ([addend] if has_addend else [])
    spec = layer_spec(LayerKind.FULLY_CONNECTED, desc, inputs, (4, 5), name="gemm+act", constants=[1, 2])
    (y,) = run_layer(backend, spec, inputs)
    assert_close(y, gemm_reference(desc, a, b, c, addend), RTOL, ATOL, spec)


@pytest.mark.parametrize("mkn", [(2, 0, 3), (0, 3, 2), (2, 3, 0)], ids=lambda mkn: "mkn{}x{}x{}".format(*mkn))
def test_fully_connected_with_an_empty_dimension(backend, mkn) -> None:
    """K = 0 makes op(a) @ op(b) all zeros, so y = beta * c."""
    m, k, n = mkn
    desc = FullyConnectedDescriptor(beta=2.0, has_bias=True)
    a, b, c = gemm_inputs(m, k, n, desc, "(N,)", seed=504)
    spec = layer_spec(LayerKind.FULLY_CONNECTED, desc, [a, b, c], (m, n), name="gemm empty")
    (y,) = run_layer(backend, spec, [a, b, c])
    assert_close(y, gemm_reference(desc, a, b, c), RTOL, ATOL, spec)


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((2, 1, 2, 3), (4, 3, 2)),
    ((4, 1, 2, 3), (1, 5, 3, 2)),
    ((2, 3, 4), (2, 4, 1)),
    ((0, 2, 3), (3, 4)),
    ((2, 0), (0, 3)),
    ((2, 3), (3, 0)),
]


@pytest.mark.parametrize("shape_a, shape_b", MATMUL_SHAPES, ids=shape_id)
def test_matmul(backend, shape_a, shape_b) -> None:
    rng = np.random.default_rng(505)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    spec = layer_spec(LayerKind.MATMUL, None, [a, b], expected.shape, name=f"matmul{list(shape_a)}@{list(shape_b)}")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, expected, RTOL, ATOL, spec)


# ---- malformed layers -----------------------------------------------------------------

PLAIN = FullyConnectedDescriptor()
WITH_C = FullyConnectedDescriptor(has_bias=True)


@pytest.mark.parametrize("desc, inputs, output, dtypes, reason", [
    pytest.param(PLAIN, [(2, 3), (4, 5)], (2, 5), None, "inner", id="inner dimensions differ"),
    pytest.param(FullyConnectedDescriptor(transpose_b=True), [(2, 3), (3, 5)], (2, 5), None, "inner",
                 id="inner dimensions differ after transpose"),
    pytest.param(PLAIN, [(2, 3, 1), (3, 5)], (2, 5), None, "rank", id="a of rank 3"),
    pytest.param(PLAIN, [(3,), (3, 5)], (5,), None, "rank", id="a of rank 1"),
    pytest.param(PLAIN, [(2, 3), (3, 5)], (5, 2), None, "output", id="output transposed"),
    pytest.param(WITH_C, [(2, 3), (3, 5), (3, 5)], (2, 5), None, "broadcast", id="c does not broadcast"),
    pytest.param(WITH_C, [(2, 3), (3, 5)], (2, 5), None, "input", id="bias flag without c"),
    pytest.param(PLAIN, [(2, 3), (3, 5), (5,)], (2, 5), None, "input", id="c without the bias flag"),
    pytest.param(FullyConnectedDescriptor(has_addend=True), [(2, 3), (3, 5), (5,)], (2, 5), None, "addend",
                 id="addend not of the output shape"),
    pytest.param(PLAIN, [(2, 3), (3, 5)], (2, 5), [DataType.FLOAT32, DataType.INT8], "int8", id="int8 b"),
])
def test_malformed_fully_connected_is_refused(backend, desc, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.FULLY_CONNECTED, desc, inputs, output, dtypes=dtypes), reason)


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([(2, 3), (4, 5)], (2, 5), None, "inner", id="inner dimensions differ"),
    pytest.param([(2, 2, 3), (3, 3, 5)], (2, 2, 5), None, "batch", id="batch dims do not broadcast"),
    pytest.param([(), (3,)], (), None, "rank", id="rank 0 a"),
    pytest.param([(2, 3), (3, 4)], (2, 4, 1), None, "output", id="wrong output shape"),
    pytest.param([(2, 3)], (2, 3), None, "input", id="one input"),
    pytest.param([(2, 3), (3, 4)], (2, 4), [DataType.INT32, DataType.INT32], "int32", id="int32 inputs"),
])
def test_malformed_matmul_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.MATMUL, None, inputs, output, dtypes=dtypes), reason)
