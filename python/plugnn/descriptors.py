"""Layer kinds and their typed descriptors, mirroring backend_api.h.

Enum values equal the header's (a test checks them against the generated cffi
types). Descriptors validate their own fields; shape checks belong to the network.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Union


class LayerKind(enum.IntEnum):
    CONVOLUTION_2D = 1
    POOLING_2D = 2
    ELEMENTWISE_BINARY = 3
    ELEMENTWISE_VARIADIC = 4
    ACTIVATION = 5
    FULLY_CONNECTED = 6
    MATMUL = 7
    SOFTMAX = 8
    BATCH_NORMALIZATION = 9
    LOCAL_RESPONSE_NORMALIZATION = 10
    CONCAT = 11
    RESHAPE = 12
    TRANSPOSE = 13
    COPY = 14
    PRECOMPILED = 15


class DataLayout(enum.IntEnum):
    NCHW = 1
    NHWC = 2


class ActivationKind(enum.IntEnum):
    RELU = 1
    BOUNDED_RELU = 2
    LEAKY_RELU = 3
    SIGMOID = 4
    TANH = 5
    ELU = 6
    HARD_SWISH = 7
    HARD_SIGMOID = 8
    ABS = 9
    SQRT = 10
    SQUARE = 11
    LINEAR = 12


class PoolingKind(enum.IntEnum):
    MAX = 1
    AVERAGE = 2
    LP = 3


class OutputRounding(enum.IntEnum):
    FLOOR = 1
    CEIL = 2


class PaddingMethod(enum.IntEnum):
    EXCLUDE = 1
    INCLUDE = 2


class BinaryOp(enum.IntEnum):
    ADD = 1
    SUB = 2
    MUL = 3
    DIV = 4
    MAXIMUM = 5
    MINIMUM = 6
    POWER = 7
    PRELU = 8


class VariadicOp(enum.IntEnum):
    SUM = 1
    MAXIMUM = 2
    MINIMUM = 3
    MEAN = 4


def _enum(enum_type: type[enum.IntEnum], value: Any, what: str) -> Any:
    if isinstance(value, enum_type):
        return value
    try:
        return enum_type[str(value).upper()] if isinstance(value, str) else enum_type(value)
    except (KeyError, ValueError):
        names = ", ".join(m.name.lower() for m in enum_type)
        raise ValueError(f"{what} {value!r} is not one of: {names}") from None


def _pair(value: Any, what: str, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(pair) != 2 or min(pair) < minimum:
        raise ValueError(f"{what} must be one or two integers >= {minimum}, got {value!r}")
    return (int(pair[0]), int(pair[1]))


def _padding(value: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (h, w) or (top, left, bottom, right)."""
    pads = (value,) * 4 if isinstance(value, int) else tuple(int(v) for v in value)
    if len(pads) == 2:
        pads = (pads[0], pads[1], pads[0], pads[1])
    if len(pads) != 4 or min(pads) < 0:
        raise ValueError(f"padding must be 1, 2 or 4 integers >= 0 (top, left, bottom, right), got {value!r}")
    return (pads[0], pads[1], pads[2], pads[3])


@dataclass(frozen=True)
class ActivationDescriptor:
    """An activation; alpha/beta as the header's pn_activation_kind says (clip: min, max)."""

    kind: ActivationKind
    alpha: float = 0.0
    beta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _enum(ActivationKind, self.kind, "activation"))


@dataclass(frozen=True)
class Convolution2dDescriptor:
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    layout: DataLayout = DataLayout.NCHW
    has_bias: bool = False
    has_addend: bool = False
    fused_activation: ActivationDescriptor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stride", _pair(self.stride, "stride", 1))
        object.__setattr__(self, "padding", _padding(self.padding))
        object.__setattr__(self, "dilation", _pair(self.dilation, "dilation", 1))
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))
        if int(self.groups) < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")


@dataclass(frozen=True)
class Pooling2dDescriptor:
    kind: PoolingKind = PoolingKind.MAX
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    rounding: OutputRounding = OutputRounding.FLOOR
    padding_method: PaddingMethod = PaddingMethod.EXCLUDE
    layout: DataLayout = DataLayout.NCHW
    p: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _enum(PoolingKind, self.kind, "pooling kind"))
        object.__setattr__(self, "kernel", _pair(self.kernel, "kernel", 1))
        object.__setattr__(self, "stride", _pair(self.stride, "stride", 1))
        object.__setattr__(self, "padding", _padding(self.padding))
        object.__setattr__(self, "dilation", _pair(self.dilation, "dilation", 1))
        object.__setattr__(self, "rounding", _enum(OutputRounding, self.rounding, "rounding"))
        object.__setattr__(self, "padding_method", _enum(PaddingMethod, self.padding_method, "padding method"))
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))
        if not self.p > 0:
            raise ValueError(f"the Lp pooling order p must be > 0, got {self.p}")


@dataclass(frozen=True)
class ElementwiseBinaryDescriptor:
    op: BinaryOp
    fused_activation: ActivationDescriptor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(BinaryOp, self.op, "binary operation"))


@dataclass(frozen=True)
class ElementwiseVariadicDescriptor:
    op: VariadicOp

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(VariadicOp, self.op, "variadic operation"))


@dataclass(frozen=True)
class FullyConnectedDescriptor:
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    has_bias: bool = False
    fused_activation: ActivationDescriptor | None = None
    has_addend: bool = False


@dataclass(frozen=True)
class SoftmaxDescriptor:
    axis: int = -1


@dataclass(frozen=True)
class BatchNormalizationDescriptor:
    epsilon: float = 1e-5
    layout: DataLayout = DataLayout.NCHW

    def __post_init__(self) -> None:
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))


@dataclass(frozen=True)
class LrnDescriptor:
    size: int
    alpha: float = 1e-4
    beta: float = 0.75
    bias: float = 1.0
    layout: DataLayout = DataLayout.NCHW

    def __post_init__(self) -> None:
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))
        if int(self.size) < 1:
            raise ValueError(f"LRN size must be >= 1, got {self.size}")


@dataclass(frozen=True)
class ConcatDescriptor:
    axis: int


@dataclass(frozen=True)
class TransposeDescriptor:
    perm: tuple[int, ...]

    def __post_init__(self) -> None:
        perm = tuple(int(p) for p in self.perm)
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(f"transpose permutation {perm} is not a permutation of 0..{len(perm) - 1}")
        object.__setattr__(self, "perm", perm)


@dataclass(frozen=True, eq=False)
class PrecompiledDescriptor:
    """A backend's own layer from optimize_subgraph; `payload` is opaque to plugnn."""

    label: str
    payload: Any = field(default=None, repr=False)


Descriptor = Union[
    ActivationDescriptor,
    Convolution2dDescriptor,
    Pooling2dDescriptor,
    ElementwiseBinaryDescriptor,
    ElementwiseVariadicDescriptor,
    FullyConnectedDescriptor,
    SoftmaxDescriptor,
    BatchNormalizationDescriptor,
    LrnDescriptor,
    ConcatDescriptor,
    TransposeDescriptor,
    PrecompiledDescriptor,
    None,
]

# The descriptor type each kind takes (None: the kind has no descriptor).
DESCRIPTOR_TYPES: dict[LayerKind, type | None] = {
    LayerKind.CONVOLUTION_2D: Convolution2dDescriptor,
    LayerKind.POOLING_2D: Pooling2dDescriptor,
    LayerKind.ELEMENTWISE_BINARY: ElementwiseBinaryDescriptor,
    LayerKind.ELEMENTWISE_VARIADIC: ElementwiseVariadicDescriptor,
    LayerKind.ACTIVATION: ActivationDescriptor,
    LayerKind.FULLY_CONNECTED: FullyConnectedDescriptor,
    LayerKind.MATMUL: None,
    LayerKind.SOFTMAX: SoftmaxDescriptor,
    LayerKind.BATCH_NORMALIZATION: BatchNormalizationDescriptor,
    LayerKind.LOCAL_RESPONSE_NORMALIZATION: LrnDescriptor,
    LayerKind.CONCAT: ConcatDescriptor,
    LayerKind.RESHAPE: None,
    LayerKind.TRANSPOSE: TransposeDescriptor,
    LayerKind.COPY: None,
    LayerKind.PRECOMPILED: PrecompiledDescriptor,
}
