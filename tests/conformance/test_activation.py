"""ACTIVATION: every activation kind, on shapes from rank 0 to rank 4 and empty tensors, on
every float type (computed in float64 by the oracle, one rounding to the output type allowed).

`activation_reference` is also the oracle of the fused activations of other layers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from plugnn.descriptors import ActivationDescriptor, ActivationKind, LayerKind
from plugnn.tensor import DataType

from .conftest import ATOL, RTOL, assert_close, assert_refused, f32, layer_spec, run_layer, shape_id

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


# Descriptor formulas from backend_api.h, in float64.
_FORMULAS = {
    ActivationKind.RELU: lambda x, a, b: np.maximum(x, 0.0),
    ActivationKind.BOUNDED_RELU: lambda x, a, b: np.minimum(np.maximum(x, a), b),
    ActivationKind.LEAKY_RELU: lambda x, a, b: np.where(x >= 0, x, a * x),
    ActivationKind.SIGMOID: lambda x, a, b: 1.0 / (1.0 + np.exp(-x)),
    ActivationKind.TANH: lambda x, a, b: np.tanh(x),
    ActivationKind.ELU: lambda x, a, b: np.where(x >= 0, x, a * np.expm1(x)),
    ActivationKind.HARD_SWISH: lambda x, a, b: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    ActivationKind.HARD_SIGMOID: lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    ActivationKind.ABS: lambda x, a, b: np.abs(x),
    ActivationKind.SQRT: lambda x, a, b: np.sqrt(x),
    ActivationKind.SQUARE: lambda x, a, b: x * x,
    ActivationKind.LINEAR: lambda x, a, b: a * x + b,
    ActivationKind.GELU: lambda x, a, b: x * (1.0 + _erf(x / np.sqrt(2.0))) / 2.0,
    ActivationKind.GELU_TANH: lambda x, a, b: x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3))) / 2.0,
    ActivationKind.SWISH: lambda x, a, b: x * _sigmoid(a * x),
    ActivationKind.MISH: lambda x, a, b: x * np.tanh(np.logaddexp(0.0, x)),
    ActivationKind.SOFTPLUS: lambda x, a, b: np.logaddexp(0.0, x),
    ActivationKind.SOFTSIGN: lambda x, a, b: x / (1.0 + np.abs(x)),
    ActivationKind.SELU: lambda x, a, b: b * np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0))),
    ActivationKind.CELU: lambda x, a, b: np.maximum(0.0, x) + np.minimum(0.0, a * np.expm1(x / a)),
    ActivationKind.THRESHOLDED_RELU: lambda x, a, b: np.where(x > a, x, 0.0),
    ActivationKind.SHRINK: lambda x, a, b: np.where(x < -a, x + b, np.where(x > a, x - b, 0.0)),
    ActivationKind.SCALED_TANH: lambda x, a, b: a * np.tanh(b * x),
}


def activation_reference(act: ActivationDescriptor | None, x: np.ndarray) -> np.ndarray:
    """The activation `act` (None: identity) of x, in float64."""
    x = np.asarray(x, dtype=np.float64)
    if act is None:
        return x
    with np.errstate(over="ignore", invalid="ignore"):  # exp(-x) of very negative x is inf: sigmoid is then 0
        return _FORMULAS[act.kind](x, f32(act.alpha), f32(act.beta))


ACTIVATIONS = {
    "relu": ActivationDescriptor("relu"),
    "bounded_relu": ActivationDescriptor("bounded_relu", alpha=-0.5, beta=0.7),
    "relu6": ActivationDescriptor("bounded_relu", alpha=0.0, beta=6.0),
    "clip_min_only": ActivationDescriptor("bounded_relu", alpha=-1.0, beta=math.inf),
    "clip_max_only": ActivationDescriptor("bounded_relu", alpha=-math.inf, beta=1.5),
    "leaky_relu": ActivationDescriptor("leaky_relu", alpha=0.1),
    "sigmoid": ActivationDescriptor("sigmoid"),
    "tanh": ActivationDescriptor("tanh"),
    "elu": ActivationDescriptor("elu", alpha=0.8),
    "hard_swish": ActivationDescriptor("hard_swish"),
    "hard_sigmoid": ActivationDescriptor("hard_sigmoid", alpha=0.2, beta=0.5),
    "abs": ActivationDescriptor("abs"),
    "sqrt": ActivationDescriptor("sqrt"),
    "square": ActivationDescriptor("square"),
    "linear": ActivationDescriptor("linear", alpha=1.5, beta=-0.25),
    "gelu": ActivationDescriptor("gelu"),
    "gelu_tanh": ActivationDescriptor("gelu_tanh"),
    "swish": ActivationDescriptor("swish", alpha=1.0),
    "swish_beta": ActivationDescriptor("swish", alpha=1.702),
    "mish": ActivationDescriptor("mish"),
    "softplus": ActivationDescriptor("softplus"),
    "softsign": ActivationDescriptor("softsign"),
    "selu": ActivationDescriptor("selu", alpha=1.67326319217681884765625, beta=1.05070102214813232421875),
    "celu": ActivationDescriptor("celu", alpha=1.0),
    "celu_small_alpha": ActivationDescriptor("celu", alpha=0.5),
    "celu_negative_alpha": ActivationDescriptor("celu", alpha=-2.0),
    "thresholded_relu": ActivationDescriptor("thresholded_relu", alpha=1.0),
    "shrink_hard": ActivationDescriptor("shrink", alpha=0.5, beta=0.0),
    "shrink_soft": ActivationDescriptor("shrink", alpha=0.5, beta=0.5),
    "scaled_tanh": ActivationDescriptor("scaled_tanh", alpha=1.7, beta=0.66),
}

FLOAT_TYPES = (DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64)
# one rounding of a float64 result to the output type (float32: the suite's RTOL/ATOL)
TOLERANCE = {DataType.FLOAT32: (RTOL, ATOL), DataType.FLOAT16: (1e-3, 1e-6), DataType.BFLOAT16: (8e-3, 1e-6),
             DataType.FLOAT64: (1e-12, 1e-14)}

SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4, 5), (0,), (0, 3), (2, 0, 4)]


def test_every_activation_kind_is_covered() -> None:
    assert {act.kind for act in ACTIVATIONS.values()} == set(ActivationKind)


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(backend, name: str, shape: tuple[int, ...]) -> None:
    act = ACTIVATIONS[name]
    x = np.random.default_rng(101).standard_normal(shape).astype(np.float32) * 4
    if act.kind is ActivationKind.SQRT:
        x = np.abs(x)  # sqrt is defined on non-negative input only
    spec = layer_spec(LayerKind.ACTIVATION, act, [x], shape, name=f"{name}{list(shape)}")
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, activation_reference(act, x), RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_on_every_float_type(backend, name: str, dtype: DataType) -> None:
    act = ACTIVATIONS[name]
    x = (np.random.default_rng(102).standard_normal((3, 17)) * 4).astype(dtype.numpy_dtype)
    if act.kind is ActivationKind.SQRT:
        x = np.abs(x)
    spec = layer_spec(LayerKind.ACTIVATION, act, [x], x.shape, name=f"{name}_{dtype.numpy_name}", dtypes=[dtype],
                      output_dtype=dtype)
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, activation_reference(act, x.astype(np.float64)), *TOLERANCE[dtype], spec)


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "elu", "hard_swish", "hard_sigmoid", "leaky_relu", "gelu",
                                  "gelu_tanh", "swish", "mish", "softplus", "softsign", "selu", "celu",
                                  "scaled_tanh"])
def test_activation_on_extreme_values_stays_finite(backend, name: str) -> None:
    act = ACTIVATIONS[name]
    x = np.array([-1e30, -1000, -100, -20, -1e-30, 0, 1e-30, 20, 100, 1000, 1e30], np.float32)
    spec = layer_spec(LayerKind.ACTIVATION, act, [x], x.shape, name=f"{name}_extreme")
    (y,) = run_layer(backend, spec, [x])
    assert np.isfinite(y).all(), f"{name} of {x} gave {y}"
    assert_close(y, activation_reference(act, x), RTOL, ATOL, spec)


def test_bounded_relu_boundaries_are_inclusive(backend) -> None:
    act = ActivationDescriptor("bounded_relu", alpha=-1.0, beta=1.0)
    x = np.array([-1.0, -1.0000001, 1.0, 1.0000001, 0.0], np.float32)
    spec = layer_spec(LayerKind.ACTIVATION, act, [x], x.shape, name="clip_edges")
    (y,) = run_layer(backend, spec, [x])
    np.testing.assert_array_equal(y, np.array([-1, -1, 1, 1, 0], np.float32))


# ---- malformed layers -----------------------------------------------------------------

RELU = ActivationDescriptor("relu")


@pytest.mark.parametrize("inputs, output, dtypes, reason", [
    pytest.param([(2, 3)], (3, 2), None, "output", id="output shape differs"),
    pytest.param([(2, 3)], (2, 3, 1), None, "output", id="output rank differs"),
    pytest.param([(2, 3), (2, 3)], (2, 3), None, "input", id="two inputs"),
    pytest.param([], (2, 3), [], "input", id="no input"),
    pytest.param([(2, 3)], (2, 3), [DataType.INT32], "int32", id="int32 input"),
])
def test_malformed_activation_is_refused(backend, inputs, output, dtypes, reason: str) -> None:
    spec = layer_spec(LayerKind.ACTIVATION, RELU, inputs, output, dtypes=dtypes)
    assert_refused(backend, spec, reason)


def test_float16_output_is_refused(backend) -> None:
    spec = layer_spec(LayerKind.ACTIVATION, RELU, [(4,)], (4,), output_dtype=DataType.FLOAT16)
    assert_refused(backend, spec, "float16")


def test_celu_with_alpha_zero_is_refused(backend) -> None:
    spec = layer_spec(LayerKind.ACTIVATION, ActivationDescriptor("celu", alpha=0.0), [(4,)], (4,))
    assert_refused(backend, spec, "CELU needs alpha != 0")


@pytest.mark.parametrize("kind", [0, 24, 1000])
def test_unknown_activation_kind_is_refused(backend, kind: int) -> None:
    act = ActivationDescriptor("relu")
    object.__setattr__(act, "kind", kind)
    spec = layer_spec(LayerKind.ACTIVATION, act, [(4,)], (4,))
    assert_refused(backend, spec, f"unknown activation kind {kind}")
