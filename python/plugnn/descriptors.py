"""Layer kinds and their typed descriptors, mirroring backend_api.h.

The enums are the header's own (generated into `_abi_defs`). Each descriptor is a frozen
dataclass naming the C struct it stands for (`c_struct`); a field maps to the C field of the
same name unless its metadata says otherwise (`c_fields`: a tuple over several C fields,
`c_flag`: one bit of a flags field, `c_array`: a count and an array). `_marshal.py` walks
these mappings against the header's field table to write and read the C structs, and a test
checks that every C field is mapped exactly once. Descriptors validate their own fields;
shape checks belong to `shapes.py`.
"""

from __future__ import annotations

import enum
from dataclasses import MISSING, dataclass, field
from typing import Any, NamedTuple, Union

from plugnn._abi_defs import (
    PN_LAYER_FLAG_HAS_ADDEND,
    PN_LAYER_FLAG_HAS_BIAS,
    ActivationKind,
    BinaryOp,
    DataLayout,
    LayerKind,
    OutputRounding,
    PaddingMethod,
    PoolingKind,
    VariadicOp,
)

__all__ = [
    "ActivationKind", "BinaryOp", "DataLayout", "LayerKind", "OutputRounding", "PaddingMethod", "PoolingKind",
    "VariadicOp", "CMapping", "c_mapping", "c_fields", "c_flag", "c_array",
    "ActivationDescriptor", "Convolution2dDescriptor", "Pooling2dDescriptor", "ElementwiseBinaryDescriptor",
    "ElementwiseVariadicDescriptor", "FullyConnectedDescriptor", "SoftmaxDescriptor",
    "BatchNormalizationDescriptor", "LrnDescriptor", "ConcatDescriptor", "TransposeDescriptor",
    "PrecompiledDescriptor", "Descriptor", "DESCRIPTOR_TYPES",
]


# ---- how a dataclass field maps to C fields ------------------------------------------------


class CMapping(NamedTuple):
    """How one descriptor field is stored in its C struct.

    codec "value": the one C field `names[0]`; "fields": a tuple, one C field per item;
    "flag": True sets bit `bit` of the C field `names[0]`; "array": a tuple stored as a count
    (`names[0]`) and the first items of an array (`names[1]`); "payload": a PRECOMPILED layer's
    payload. `since` is the minor ABI version that appended the C fields (0: in 1.0)."""

    codec: str
    names: tuple[str, ...]
    bit: int = 0
    since: int = 0


def _mapped(mapping: CMapping, default: Any) -> Any:
    if default is MISSING:
        return field(metadata={"c": mapping})
    return field(default=default, metadata={"c": mapping})


def c_fields(*names: str, default: Any = MISSING) -> Any:
    """A tuple field stored as the C fields `names`, one item each."""
    return _mapped(CMapping("fields", names), default)


def c_flag(name: str, bit: int, default: bool = False) -> Any:
    """A bool field stored as bit `bit` of the C field `name`."""
    return _mapped(CMapping("flag", (name,), bit), default)


def c_array(count: str, array: str, default: Any = MISSING) -> Any:
    """A tuple field stored as the C count field `count` and the C array `array`."""
    return _mapped(CMapping("array", (count, array)), default)


def c_mapping(descriptor_field: Any) -> CMapping:
    """The mapping of a dataclass field (its own name, one C field, when it has none)."""
    return descriptor_field.metadata.get("c") or CMapping("value", (descriptor_field.name,))


def c_struct(name: str) -> Any:
    """Class decorator: the C struct a descriptor dataclass stands for."""

    def mark(cls: type) -> type:
        cls.c_struct = name  # type: ignore[attr-defined]
        return cls

    return mark


# ---- validation helpers ----------------------------------------------------------------------


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


@c_struct("pn_activation_desc")
@dataclass(frozen=True)
class ActivationDescriptor:
    """An activation; alpha/beta as the header's pn_activation_kind says (clip: min, max)."""

    kind: ActivationKind
    alpha: float = 0.0
    beta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _enum(ActivationKind, self.kind, "activation"))


@c_struct("pn_convolution_2d_desc")
@dataclass(frozen=True)
class Convolution2dDescriptor:
    stride: tuple[int, int] = c_fields("stride_h", "stride_w", default=(1, 1))
    padding: tuple[int, int, int, int] = c_fields(  # top, left, bottom, right
        "pad_top", "pad_left", "pad_bottom", "pad_right", default=(0, 0, 0, 0))
    dilation: tuple[int, int] = c_fields("dilation_h", "dilation_w", default=(1, 1))
    groups: int = 1
    layout: DataLayout = DataLayout.NCHW
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)
    has_addend: bool = c_flag("flags", PN_LAYER_FLAG_HAS_ADDEND)
    fused_activation: ActivationDescriptor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stride", _pair(self.stride, "stride", 1))
        object.__setattr__(self, "padding", _padding(self.padding))
        object.__setattr__(self, "dilation", _pair(self.dilation, "dilation", 1))
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))
        if int(self.groups) < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")


@c_struct("pn_pooling_2d_desc")
@dataclass(frozen=True)
class Pooling2dDescriptor:
    kind: PoolingKind = PoolingKind.MAX
    kernel: tuple[int, int] = c_fields("kernel_h", "kernel_w", default=(1, 1))
    stride: tuple[int, int] = c_fields("stride_h", "stride_w", default=(1, 1))
    padding: tuple[int, int, int, int] = c_fields(
        "pad_top", "pad_left", "pad_bottom", "pad_right", default=(0, 0, 0, 0))
    dilation: tuple[int, int] = c_fields("dilation_h", "dilation_w", default=(1, 1))
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


@c_struct("pn_elementwise_binary_desc")
@dataclass(frozen=True)
class ElementwiseBinaryDescriptor:
    op: BinaryOp
    fused_activation: ActivationDescriptor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(BinaryOp, self.op, "binary operation"))


@c_struct("pn_elementwise_variadic_desc")
@dataclass(frozen=True)
class ElementwiseVariadicDescriptor:
    op: VariadicOp

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(VariadicOp, self.op, "variadic operation"))


@c_struct("pn_fully_connected_desc")
@dataclass(frozen=True)
class FullyConnectedDescriptor:
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)
    fused_activation: ActivationDescriptor | None = None
    has_addend: bool = c_flag("flags", PN_LAYER_FLAG_HAS_ADDEND)


@c_struct("pn_softmax_desc")
@dataclass(frozen=True)
class SoftmaxDescriptor:
    axis: int = -1


@c_struct("pn_batch_normalization_desc")
@dataclass(frozen=True)
class BatchNormalizationDescriptor:
    epsilon: float = 1e-5
    layout: DataLayout = DataLayout.NCHW

    def __post_init__(self) -> None:
        object.__setattr__(self, "layout", _enum(DataLayout, self.layout, "layout"))


@c_struct("pn_lrn_desc")
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


@c_struct("pn_concat_desc")
@dataclass(frozen=True)
class ConcatDescriptor:
    axis: int


@c_struct("pn_transpose_desc")
@dataclass(frozen=True)
class TransposeDescriptor:
    perm: tuple[int, ...] = c_array("rank", "perm")

    def __post_init__(self) -> None:
        perm = tuple(int(p) for p in self.perm)
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(f"transpose permutation {perm} is not a permutation of 0..{len(perm) - 1}")
        object.__setattr__(self, "perm", perm)


@c_struct("pn_precompiled_desc")
@dataclass(frozen=True, eq=False)
class PrecompiledDescriptor:
    """A backend's own layer from optimize_subgraph; `payload` is opaque to plugnn (the C
    fields payload and release_payload, which the marshalling handles as one)."""

    label: str
    payload: Any = field(default=None, repr=False, metadata={"c": CMapping("payload", ("payload", "release_payload"))})

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", "precompiled")


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
