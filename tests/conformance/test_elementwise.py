"""ELEMENTWISE_BINARY and ELEMENTWISE_VARIADIC: NumPy broadcasting of every operation.

The oracle is NumPy itself in float64: np.broadcast_shapes gives the output shape and
the ufuncs give the values.
"""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import (
    ActivationDescriptor,
    BinaryOp,
    ElementwiseBinaryDescriptor,
    ElementwiseVariadicDescriptor,
    LayerKind,
    VariadicOp,
)
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, layer_spec, run_layer, shape_id
from .test_activation import activation_reference

BINARY_REFERENCE = {
    BinaryOp.ADD: np.add,
    BinaryOp.SUB: np.subtract,
    BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.divide,
    BinaryOp.MAXIMUM: np.maximum,
    BinaryOp.MINIMUM: np.minimum,
    BinaryOp.POWER: np.power,
    BinaryOp.PRELU: lambda a, b: np.where(a >= 0, a, a * b),
}

VARIADIC_REFERENCE = {
    VariadicOp.SUM: lambda xs: np.sum(xs, axis=0),
    VariadicOp.MAXIMUM: lambda xs: np.max(xs, axis=0),
    VariadicOp.MINIMUM: lambda xs: np.min(xs, axis=0),
    VariadicOp.MEAN: lambda xs: np.mean(xs, axis=0),
}

# (a shape, b shape): equal shapes, size-1 dims, missing leading dims, rank 0, empty dims.
SHAPE_PAIRS = [
    ((), ()),
    ((3,), ()),
    ((), (2, 3)),
    ((1,), (1,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 3), (2, 1)),
    ((1, 3), (2, 1)),
    ((2, 1, 4), (3, 1)),
    ((1,), (5, 1, 2)),
    ((4, 1, 3, 1), (2, 1, 5)),
    ((2, 1, 1, 1, 1, 1, 1, 3), (4, 1)),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((0,), ()),
]


def binary_inputs(op: BinaryOp, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(301)
    a = np.asarray(rng.standard_normal(shape_a), np.float32)
    b = np.asarray(rng.standard_normal(shape_b), np.float32)
    if op is BinaryOp.POWER:
        a = np.abs(a) + np.float32(0.1)  # real powers of positive bases only
    if op is BinaryOp.DIV:
        b = np.where(np.abs(b) < 0.1, np.float32(0.5), b).astype(np.float32)  # no near-zero divisors
    return a, b


def binary_reference(desc: ElementwiseBinaryDescriptor, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = BINARY_REFERENCE[desc.op](a.astype(np.float64), b.astype(np.float64))
    return activation_reference(desc.fused_activation, out)


@pytest.mark.parametrize("shape_a, shape_b", SHAPE_PAIRS, ids=shape_id)
@pytest.mark.parametrize("op", list(BinaryOp), ids=lambda op: op.name.lower())
def test_binary(backend, op: BinaryOp, shape_a, shape_b) -> None:
    a, b = binary_inputs(op, shape_a, shape_b)
    desc = ElementwiseBinaryDescriptor(op)
    out_shape = np.broadcast_shapes(shape_a, shape_b)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], out_shape,
                      name=f"{op.name.lower()}{list(shape_a)}{list(shape_b)}")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b), RTOL, ATOL, spec)


FUSED = [
    ActivationDescriptor("relu"),
    ActivationDescriptor("bounded_relu", alpha=-0.5, beta=0.5),
    ActivationDescriptor("sigmoid"),
    ActivationDescriptor("linear", alpha=2.0, beta=1.0),
]


@pytest.mark.parametrize("act", FUSED, ids=lambda act: act.kind.name.lower())
@pytest.mark.parametrize("op", [BinaryOp.ADD, BinaryOp.MUL, BinaryOp.SUB, BinaryOp.PRELU],
                         ids=lambda op: op.name.lower())
def test_binary_with_fused_activation(backend, op: BinaryOp, act: ActivationDescriptor) -> None:
    a, b = binary_inputs(op, (2, 3, 4), (3, 1))
    desc = ElementwiseBinaryDescriptor(op, fused_activation=act)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], (2, 3, 4), name=f"{op.name.lower()}+act")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b), RTOL, ATOL, spec)


@pytest.mark.parametrize("op", [BinaryOp.MAXIMUM, BinaryOp.MINIMUM, BinaryOp.ADD],
                         ids=lambda op: op.name.lower())
def test_binary_propagates_nan(backend, op: BinaryOp) -> None:
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([0.0, np.nan, 1.0, np.nan], np.float32)
    desc = ElementwiseBinaryDescriptor(op)
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [a, b], (4,), name=f"{op.name.lower()}_nan")
    (y,) = run_layer(backend, spec, [a, b])
    assert_close(y, binary_reference(desc, a, b), RTOL, ATOL, spec)


def test_prelu_with_per_channel_slope(backend) -> None:
    rng = np.random.default_rng(302)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1, 1)
    desc = ElementwiseBinaryDescriptor("prelu")
    spec = layer_spec(LayerKind.ELEMENTWISE_BINARY, desc, [x, slope], x.shape, name="prelu_channels", constants=[1])
    (y,) = run_layer(backend, spec, [x, slope])
    assert_close(y, binary_reference(desc, x, slope), RTOL, ATOL, spec)


VARIADIC_SHAPES = [
    [(3,)],
    [(2, 3)],
    [(2, 3), (3,)],
    [(), ()],
    [(2, 1, 4), (3, 1), ()],
    [(2, 1, 4), (3, 1), (), (1, 3, 4)],
    [(2, 2)] * 4,
    [(0, 2), (1, 2)],
    [(1,), (4, 1), (1, 5)],
]


@pytest.mark.parametrize("shapes", VARIADIC_SHAPES, ids=shape_id)
@pytest.mark.parametrize("op", list(VariadicOp), ids=lambda op: op.name.lower())
def test_variadic(backend, op: VariadicOp, shapes) -> None:
    rng = np.random.default_rng(303)
    xs = [np.asarray(rng.standard_normal(shape), np.float32) for shape in shapes]
    out_shape = np.broadcast_shapes(*shapes)
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, out_shape,
                      name=f"{op.name.lower()}x{len(xs)}")
    (y,) = run_layer(backend, spec, xs)
    expected = VARIADIC_REFERENCE[op](np.broadcast_arrays(*[x.astype(np.float64) for x in xs]))
    assert_close(y, expected, RTOL, ATOL, spec)


@pytest.mark.parametrize("op", [VariadicOp.MAXIMUM, VariadicOp.MINIMUM, VariadicOp.SUM],
                         ids=lambda op: op.name.lower())
def test_variadic_propagates_nan(backend, op: VariadicOp) -> None:
    xs = [np.array([np.nan, 1.0, 2.0], np.float32), np.array([0.0, np.nan, 1.0], np.float32),
          np.array([0.0, 3.0, np.nan], np.float32)]
    spec = layer_spec(LayerKind.ELEMENTWISE_VARIADIC, ElementwiseVariadicDescriptor(op), xs, (3,),
                      name=f"{op.name.lower()}_nan")
    (y,) = run_layer(backend, spec, xs)
    assert np.isnan(y).all(), f"{op.name} of NaN-holding columns gave {y}"


# ---- malformed layers -----------------------------------------------------------------

ADD = ElementwiseBinaryDescriptor("add")
SUM = ElementwiseVariadicDescriptor("sum")


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([(2, 3), (4,)], (2, 3), None, "broadcast", id="shapes do not broadcast"),
    pytest.param([(2, 3), (3,)], (3, 3), None, "output", id="output is not the broadcast"),
    pytest.param([(2, 3), (3,)], (1, 2, 3), None, "output", id="output has an extra dim"),
    pytest.param([(2, 3)], (2, 3), None, "input", id="one input"),
    pytest.param([(2, 3), (2, 3), (2, 3)], (2, 3), None, "input", id="three inputs"),
    pytest.param([(2, 3), (2, 3)], (2, 3), [DataType.FLOAT32, DataType.INT64], "int64", id="int64 b"),
])
def test_malformed_binary_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.ELEMENTWISE_BINARY, ADD, inputs, output, dtypes=dtypes), reason)


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([], (2, 3), [], "input", id="no inputs"),
    pytest.param([(2, 3), (3,), (2,)], (2, 3), None, "broadcast", id="third input does not broadcast"),
    pytest.param([(2, 3), (3,)], (2, 1), None, "output", id="output is not the broadcast"),
    pytest.param([(2,), (2,)], (2,), [DataType.FLOAT32, DataType.BOOL], "bool", id="bool input"),
])
def test_malformed_variadic_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    assert_refused(backend, layer_spec(LayerKind.ELEMENTWISE_VARIADIC, SUM, inputs, output, dtypes=dtypes), reason)
