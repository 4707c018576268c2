"""The random generators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike and
Multinomial (opset 7 on; Bernoulli is an ONNX function whose body is RandomUniformLike,
Greater and Cast), one RANDOM layer each.

Values come from the generator backend_api.h specifies (Philox4x64-10, keyed by the seed, one
counter per output element), so a model gives the same values on every backend. With a `seed`
attribute (ONNX's float, truncated to an integer and taken modulo 2^64) the layer draws the same
values on every run, as ONNX's reference does for a seeded node. Without one, the import draws a
64-bit seed from the operating system and the layer advances its counter on every run
(PN_RANDOM_ADVANCE): fresh values each run, as ONNX means for an unseeded generator.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

from plugnn.descriptors import RandomDescriptor, RandomOp
from plugnn.onnx.context import NodeContext, PendingInput, np_dtype, type_name
from plugnn.onnx.registry import op
from plugnn.onnx.static_inputs import dtype_of
from plugnn.tensor import DataType


def _seed(ctx: NodeContext) -> tuple[int, bool]:
    """(key, advance): the model's seed, or a fresh one that advances every run."""
    if not ctx.has("seed"):
        return secrets.randbits(64), True
    seed = float(ctx.attr("seed"))
    if not math.isfinite(seed):
        raise ctx.unsupported_value("seed", seed, "a finite number")
    return int(seed) % 2 ** 64, False


def _float_type(ctx: NodeContext, elem_type: int, where: str) -> DataType:
    dtype = np_dtype(elem_type)
    try:
        plugnn_type = DataType.from_any(dtype)
    except ValueError:
        plugnn_type = None
    if plugnn_type is None or not plugnn_type.is_float:
        raise ctx.error(f"{where} is {type_name(elem_type)}; the random generators make float16, bfloat16, float "
                        f"or double values")
    return plugnn_type


def _shape(ctx: NodeContext) -> tuple[int, ...]:
    shape = ctx.ints("shape")
    if shape is None:
        raise ctx.error("attribute 'shape' is required")
    if any(s < 0 for s in shape):
        raise ctx.unsupported_value("shape", shape, "dims >= 0")
    return tuple(shape)


def _like(ctx: NodeContext) -> tuple[tuple[int, ...], DataType]:
    """The shape of input 0 and the output type (attribute dtype, else input 0's)."""
    value = ctx.value(0)
    shape = tuple(value.shape)
    if ctx.has("dtype"):
        return shape, _float_type(ctx, int(ctx.attr("dtype")), f"attribute 'dtype' = {int(ctx.attr('dtype'))}")
    dtype = value.dtype if isinstance(value, PendingInput) else dtype_of(value)
    try:
        plugnn_type = DataType.from_any(dtype)
    except ValueError:
        plugnn_type = None
    if plugnn_type is None or not plugnn_type.is_float:
        raise ctx.error(f"input 0 is {dtype} and attribute 'dtype' is not given; the output takes the input's "
                        f"type, which must be a float type")
    return shape, plugnn_type


def _generate(ctx: NodeContext, kind: RandomOp, shape: tuple[int, ...], dtype: DataType, a: float,
              b: float) -> list[Any]:
    seed, advance = _seed(ctx)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ctx.error(f"the distribution's parameters must be finite, got {a} and {b}")
    if kind is RandomOp.UNIFORM and a > b:
        raise ctx.error(f"attribute 'low' ({a}) is above 'high' ({b})")
    desc = RandomDescriptor(kind, seed, a, b, advance)
    return [ctx.network.add_random(desc, shape, dtype, name=ctx.name())]


def _attribute_type(ctx: NodeContext) -> DataType:
    elem_type = int(ctx.attr("dtype", 1))
    return _float_type(ctx, elem_type, f"attribute 'dtype' = {elem_type}")


@op("RandomUniform", ("dtype", "high", "low", "seed", "shape"))
def random_uniform(ctx: NodeContext) -> list[Any]:
    return _generate(ctx, RandomOp.UNIFORM, _shape(ctx), _attribute_type(ctx), float(ctx.attr("low", 0.0)),
                     float(ctx.attr("high", 1.0)))


@op("RandomNormal", ("dtype", "mean", "scale", "seed", "shape"))
def random_normal(ctx: NodeContext) -> list[Any]:
    return _generate(ctx, RandomOp.NORMAL, _shape(ctx), _attribute_type(ctx), float(ctx.attr("mean", 0.0)),
                     float(ctx.attr("scale", 1.0)))


@op("RandomUniformLike", ("dtype", "high", "low", "seed"))
def random_uniform_like(ctx: NodeContext) -> list[Any]:
    shape, dtype = _like(ctx)
    return _generate(ctx, RandomOp.UNIFORM, shape, dtype, float(ctx.attr("low", 0.0)), float(ctx.attr("high", 1.0)))


@op("RandomNormalLike", ("dtype", "mean", "scale", "seed"))
def random_normal_like(ctx: NodeContext) -> list[Any]:
    shape, dtype = _like(ctx)
    return _generate(ctx, RandomOp.NORMAL, shape, dtype, float(ctx.attr("mean", 0.0)), float(ctx.attr("scale", 1.0)))


@op("Multinomial", ("dtype", "sample_size", "seed"))
def multinomial(ctx: NodeContext) -> list[Any]:
    elem_type = int(ctx.attr("dtype", 6))
    dtype = {6: DataType.INT32, 7: DataType.INT64}.get(elem_type)
    if dtype is None:
        raise ctx.unsupported_value("dtype", type_name(elem_type), "int32, int64")
    samples = int(ctx.attr("sample_size", 1))
    if samples < 0:
        raise ctx.unsupported_value("sample_size", samples, "an integer >= 0")
    logits = ctx.tensor(0, "input")
    if len(logits.shape) != 2 or not logits.dtype.is_float or logits.shape[1] < 1:
        raise ctx.error(f"input 0 must be float logits [batch_size, class_size >= 1], got {logits.dtype.numpy_name} "
                        f"of shape {list(logits.shape)}")
    seed, advance = _seed(ctx)
    desc = RandomDescriptor(RandomOp.MULTINOMIAL, seed, 0.0, 0.0, advance)
    return [ctx.network.add_random(desc, (logits.shape[0], samples), dtype, logits, name=ctx.name())]
