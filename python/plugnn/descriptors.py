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
    PN_MAX_DIMS,
    DataType,
    PN_LAYER_FLAG_HAS_ADDEND,
    PN_LAYER_FLAG_HAS_BIAS,
    PN_RECURRENT_HAS_BIAS,
    PN_RECURRENT_HAS_INITIAL_C,
    PN_RECURRENT_HAS_INITIAL_H,
    PN_RECURRENT_HAS_PEEPHOLES,
    PN_RECURRENT_HAS_SEQUENCE_LENS,
    PN_DEFORMABLE_HAS_MASK,
    PN_RANDOM_ADVANCE,
    PN_SPECTRAL_HAS_WINDOW,
    ActivationKind,
    BinaryOp,
    ConvolutionOp,
    CoordinateTransform,
    CumulativeOp,
    DataDependentOp,
    DataLayout,
    GatherOp,
    GridPadding,
    LayerKind,
    LinearAlgebraOp,
    NearestMode,
    NormalizationOp,
    OutputRounding,
    PaddingMethod,
    PadMode,
    PoolingKind,
    QuantizationOp,
    QuantizedOp,
    RandomOp,
    RecurrentCell,
    RecurrentDirection,
    ReduceOp,
    ResizeMode,
    ScatterOp,
    ScatterReduction,
    SpectralOp,
    UnaryOp,
    VariadicOp,
)
from plugnn.symbolic import Dim, as_dim

__all__ = [
    "ActivationKind", "BinaryOp", "ConvolutionOp", "CoordinateTransform", "CumulativeOp", "DataLayout", "GatherOp",
    "LayerKind", "NearestMode", "NormalizationOp", "OutputRounding", "PaddingMethod", "PadMode", "PoolingKind",
    "RecurrentCell", "RecurrentDirection", "ReduceOp", "ResizeMode", "ScatterOp", "ScatterReduction", "UnaryOp",
    "VariadicOp", "CMapping", "c_mapping", "c_fields", "c_flag", "c_array", "c_activations",
    "ActivationDescriptor", "Convolution2dDescriptor", "Pooling2dDescriptor", "ElementwiseBinaryDescriptor",
    "ElementwiseVariadicDescriptor", "FullyConnectedDescriptor", "SoftmaxDescriptor",
    "BatchNormalizationDescriptor", "LrnDescriptor", "ConcatDescriptor", "TransposeDescriptor",
    "PrecompiledDescriptor", "ElementwiseUnaryDescriptor", "ReduceDescriptor", "NormalizationDescriptor",
    "GatherDescriptor", "ScatterDescriptor", "SliceDescriptor", "SplitDescriptor", "PadDescriptor",
    "ResizeDescriptor", "CastDescriptor", "ConvolutionDescriptor", "PoolingDescriptor", "RecurrentDescriptor",
    "TopKDescriptor", "CumulativeDescriptor", "OneHotDescriptor", "TriangularDescriptor",
    "QuantizationOp", "QuantizedOp", "QuantizationDescriptor", "QuantizedConvolutionDescriptor",
    "QuantizedMatMulDescriptor",
    "Descriptor", "DESCRIPTOR_TYPES",
    "GridPadding", "LinearAlgebraOp", "RandomOp", "SpectralOp", "GridSampleDescriptor", "RoiAlignDescriptor",
    "DeformableConvolutionDescriptor", "SpectralDescriptor", "LinearAlgebraDescriptor", "RandomDescriptor",
]


MAX_DIMS = PN_MAX_DIMS


# ---- how a dataclass field maps to C fields ------------------------------------------------


class CMapping(NamedTuple):
    """How one descriptor field is stored in its C struct.

    codec "value": the one C field `names[0]`; "fields": a tuple, one C field per item;
    "flag": True sets bit `bit` of the C field `names[0]`; "array": a tuple stored as a count
    (`names[0]`, which several arrays may share) and the first items of an array (`names[1]`);
    "activations": a tuple of ActivationDescriptors stored as a count and arrays of kinds,
    alphas and betas (`names`); "payload": a PRECOMPILED layer's payload. `since` is the minor
    ABI version that appended the C fields (0: in 1.0)."""

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


def c_activations(count: str, kinds: str, alphas: str, betas: str, default: Any = ()) -> Any:
    """A tuple of ActivationDescriptors stored as a count and parallel arrays."""
    return _mapped(CMapping("activations", (count, kinds, alphas, betas)), default)


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
    # a Dim (plugnn.symbolic) is kept: a global pooling's kernel is its input's symbolic extent
    pair = (value, value) if isinstance(value, (int, Dim)) else tuple(as_dim(v) for v in value)
    if len(pair) != 2 or min(pair) < minimum:
        raise ValueError(f"{what} must be one or two integers >= {minimum}, got {value!r}")
    return (as_dim(pair[0]), as_dim(pair[1]))


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


# ---- since ABI 1.1 ---------------------------------------------------------------------------


def _axes(value: Any, what: str = "axes") -> tuple[int, ...]:
    axes = tuple(as_dim(a) for a in value)  # a slice's starts may be symbolic (plugnn.symbolic)
    if len(axes) > MAX_DIMS:
        raise ValueError(f"{what} {axes} list more than {MAX_DIMS} dimensions")
    return axes


def _spatial(value: Any, rank: int, what: str, minimum: int) -> tuple[int, ...]:
    values = (int(value),) * rank if isinstance(value, int) else tuple(int(v) for v in value)
    if len(values) != rank or (values and min(values) < minimum):
        raise ValueError(f"{what} must be {rank} integers >= {minimum}, got {value!r}")
    return values


@c_struct("pn_elementwise_unary_desc")
@dataclass(frozen=True)
class ElementwiseUnaryDescriptor:
    op: UnaryOp

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(UnaryOp, self.op, "unary operation"))


@c_struct("pn_reduce_desc")
@dataclass(frozen=True)
class ReduceDescriptor:
    """Reduce over `axes` (resolved: increasing, non-negative; shapes.py checks them)."""

    op: ReduceOp
    axes: tuple[int, ...] = c_array("num_axes", "axes", default=())
    keep_dims: bool = True
    select_last_index: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(ReduceOp, self.op, "reduction"))
        object.__setattr__(self, "axes", _axes(self.axes))


@c_struct("pn_normalization_desc")
@dataclass(frozen=True)
class NormalizationDescriptor:
    op: NormalizationOp
    axis: int = -1
    num_groups: int = 0
    epsilon: float = 1e-5
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(NormalizationOp, self.op, "normalization"))
        if int(self.num_groups) < 0:
            raise ValueError(f"num_groups must be >= 0, got {self.num_groups}")


@c_struct("pn_gather_desc")
@dataclass(frozen=True)
class GatherDescriptor:
    op: GatherOp = GatherOp.TAKE
    axis: int = 0
    batch_dims: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(GatherOp, self.op, "gather operation"))
        if int(self.batch_dims) < 0:
            raise ValueError(f"batch_dims must be >= 0, got {self.batch_dims}")


@c_struct("pn_scatter_desc")
@dataclass(frozen=True)
class ScatterDescriptor:
    op: ScatterOp = ScatterOp.ELEMENTS
    reduction: ScatterReduction = ScatterReduction.NONE
    axis: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(ScatterOp, self.op, "scatter operation"))
        object.__setattr__(self, "reduction", _enum(ScatterReduction, self.reduction, "scatter reduction"))


@c_struct("pn_slice_desc")
@dataclass(frozen=True)
class SliceDescriptor:
    """Per input dimension: the (resolved) start and the step; the output's dims give the counts."""

    starts: tuple[int, ...] = c_array("rank", "starts")
    steps: tuple[int, ...] = c_array("rank", "steps")

    def __post_init__(self) -> None:
        object.__setattr__(self, "starts", _axes(self.starts, "starts"))
        object.__setattr__(self, "steps", _axes(self.steps, "steps"))
        if len(self.starts) != len(self.steps):
            raise ValueError(f"starts {self.starts} and steps {self.steps} differ in length")
        if 0 in self.steps:
            raise ValueError(f"a slice step is 0: {self.steps}")


@c_struct("pn_split_desc")
@dataclass(frozen=True)
class SplitDescriptor:
    axis: int = 0


@c_struct("pn_pad_desc")
@dataclass(frozen=True)
class PadDescriptor:
    mode: PadMode = PadMode.CONSTANT
    pads_begin: tuple[int, ...] = c_array("rank", "pads_begin", default=())
    pads_end: tuple[int, ...] = c_array("rank", "pads_end", default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _enum(PadMode, self.mode, "pad mode"))
        object.__setattr__(self, "pads_begin", _axes(self.pads_begin, "pads_begin"))
        object.__setattr__(self, "pads_end", _axes(self.pads_end, "pads_end"))
        if len(self.pads_begin) != len(self.pads_end):
            raise ValueError(f"pads_begin {self.pads_begin} and pads_end {self.pads_end} differ in length")


@c_struct("pn_resize_desc")
@dataclass(frozen=True)
class ResizeDescriptor:
    mode: ResizeMode = ResizeMode.NEAREST
    coordinates: CoordinateTransform = CoordinateTransform.HALF_PIXEL
    nearest_mode: NearestMode = NearestMode.ROUND_PREFER_FLOOR
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    extrapolation_value: float = 0.0
    antialias: bool = False
    scales: tuple[float, ...] = c_array("rank", "scales", default=())
    roi_start: tuple[float, ...] = c_array("rank", "roi_start", default=())
    roi_end: tuple[float, ...] = c_array("rank", "roi_end", default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _enum(ResizeMode, self.mode, "resize mode"))
        object.__setattr__(self, "coordinates", _enum(CoordinateTransform, self.coordinates,
                                                      "coordinate transformation"))
        object.__setattr__(self, "nearest_mode", _enum(NearestMode, self.nearest_mode, "nearest mode"))
        rank = len(self.scales)
        object.__setattr__(self, "scales", tuple(float(v) for v in self.scales))
        for name in ("roi_start", "roi_end"):
            values = tuple(float(v) for v in getattr(self, name)) or (0.0,) * rank if name == "roi_start" \
                else tuple(float(v) for v in getattr(self, name)) or (1.0,) * rank
            if len(values) != rank:
                raise ValueError(f"{name} has {len(values)} values for {rank} scales")
            object.__setattr__(self, name, values)
        if rank > MAX_DIMS or any(not v > 0 for v in self.scales):
            raise ValueError(f"scales must be at most {MAX_DIMS} values > 0, got {self.scales}")


@c_struct("pn_cast_desc")
@dataclass(frozen=True)
class CastDescriptor:
    """saturate: a value beyond a float target's range becomes its largest finite value of that
    sign instead of an infinity (off by default, as in IEEE and NumPy conversions)."""

    saturate: bool = False


@c_struct("pn_convolution_desc")
@dataclass(frozen=True)
class ConvolutionDescriptor:
    """1-, 2- or 3-D convolution (NC[D]HW): forward or transposed; one value per spatial axis."""

    op: ConvolutionOp = ConvolutionOp.FORWARD
    strides: tuple[int, ...] = c_array("spatial_rank", "strides", default=(1, 1))
    pads_begin: tuple[int, ...] = c_array("spatial_rank", "pads_begin", default=(0, 0))
    pads_end: tuple[int, ...] = c_array("spatial_rank", "pads_end", default=(0, 0))
    dilations: tuple[int, ...] = c_array("spatial_rank", "dilations", default=(1, 1))
    output_padding: tuple[int, ...] = c_array("spatial_rank", "output_padding", default=(0, 0))
    groups: int = 1
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)
    fused_activation: ActivationDescriptor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(ConvolutionOp, self.op, "convolution operation"))
        rank = len(tuple(self.strides)) if not isinstance(self.strides, int) else 2
        if not 1 <= rank <= 3:
            raise ValueError(f"a convolution has 1 to 3 spatial axes, got strides {self.strides}")
        object.__setattr__(self, "strides", _spatial(self.strides, rank, "strides", 1))
        object.__setattr__(self, "pads_begin", _spatial(self.pads_begin, rank, "pads_begin", 0))
        object.__setattr__(self, "pads_end", _spatial(self.pads_end, rank, "pads_end", 0))
        object.__setattr__(self, "dilations", _spatial(self.dilations, rank, "dilations", 1))
        object.__setattr__(self, "output_padding", _spatial(self.output_padding, rank, "output_padding", 0))
        if int(self.groups) < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")

    @property
    def spatial_rank(self) -> int:
        return len(self.strides)


@c_struct("pn_pooling_desc")
@dataclass(frozen=True)
class PoolingDescriptor:
    """1-, 2- or 3-D pooling (NC[D]HW); one value per spatial axis."""

    kind: PoolingKind = PoolingKind.MAX
    kernel: tuple[int, ...] = c_array("spatial_rank", "kernel", default=(1, 1))
    strides: tuple[int, ...] = c_array("spatial_rank", "strides", default=(1, 1))
    pads_begin: tuple[int, ...] = c_array("spatial_rank", "pads_begin", default=(0, 0))
    pads_end: tuple[int, ...] = c_array("spatial_rank", "pads_end", default=(0, 0))
    dilations: tuple[int, ...] = c_array("spatial_rank", "dilations", default=(1, 1))
    rounding: OutputRounding = OutputRounding.FLOOR
    padding_method: PaddingMethod = PaddingMethod.EXCLUDE
    p: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _enum(PoolingKind, self.kind, "pooling kind"))
        rank = len(tuple(self.kernel))
        if not 1 <= rank <= 3:
            raise ValueError(f"pooling has 1 to 3 spatial axes, got kernel {self.kernel}")
        object.__setattr__(self, "kernel", _spatial(self.kernel, rank, "kernel", 1))
        object.__setattr__(self, "strides", _spatial(self.strides, rank, "strides", 1))
        object.__setattr__(self, "pads_begin", _spatial(self.pads_begin, rank, "pads_begin", 0))
        object.__setattr__(self, "pads_end", _spatial(self.pads_end, rank, "pads_end", 0))
        object.__setattr__(self, "dilations", _spatial(self.dilations, rank, "dilations", 1))
        object.__setattr__(self, "rounding", _enum(OutputRounding, self.rounding, "rounding"))
        object.__setattr__(self, "padding_method", _enum(PaddingMethod, self.padding_method, "padding method"))
        if not self.p > 0:
            raise ValueError(f"the Lp pooling order p must be > 0, got {self.p}")

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)


@c_struct("pn_recurrent_desc")
@dataclass(frozen=True)
class RecurrentDescriptor:
    cell: RecurrentCell
    hidden_size: int
    direction: RecurrentDirection = RecurrentDirection.FORWARD
    activations: tuple[ActivationDescriptor, ...] = c_activations(
        "num_activations", "activations", "activation_alpha", "activation_beta")
    has_bias: bool = c_flag("flags", PN_RECURRENT_HAS_BIAS)
    has_sequence_lens: bool = c_flag("flags", PN_RECURRENT_HAS_SEQUENCE_LENS)
    has_initial_h: bool = c_flag("flags", PN_RECURRENT_HAS_INITIAL_H)
    has_initial_c: bool = c_flag("flags", PN_RECURRENT_HAS_INITIAL_C)
    has_peepholes: bool = c_flag("flags", PN_RECURRENT_HAS_PEEPHOLES)
    batch_major: bool = False
    clip: float = 0.0
    linear_before_reset: bool = False
    input_forget: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "cell", _enum(RecurrentCell, self.cell, "recurrent cell"))
        object.__setattr__(self, "direction", _enum(RecurrentDirection, self.direction, "direction"))
        object.__setattr__(self, "activations", tuple(self.activations))
        if int(self.hidden_size) < 1:
            raise ValueError(f"hidden_size must be >= 1, got {self.hidden_size}")
        if len(self.activations) > 6:
            raise ValueError(f"at most 6 activations, got {len(self.activations)}")
        if not self.clip >= 0:
            raise ValueError(f"clip must be >= 0 (0: none), got {self.clip}")


@c_struct("pn_top_k_desc")
@dataclass(frozen=True)
class TopKDescriptor:
    axis: int = -1
    largest: bool = True
    sorted: bool = True


@c_struct("pn_cumulative_desc")
@dataclass(frozen=True)
class CumulativeDescriptor:
    op: CumulativeOp = CumulativeOp.SUM
    axis: int = 0
    exclusive: bool = False
    reverse: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(CumulativeOp, self.op, "cumulative operation"))


@c_struct("pn_one_hot_desc")
@dataclass(frozen=True)
class OneHotDescriptor:
    axis: int = -1


@c_struct("pn_triangular_desc")
@dataclass(frozen=True)
class TriangularDescriptor:
    upper: bool = True
    k: int = 0


@c_struct("pn_quantization_desc")
@dataclass(frozen=True)
class QuantizationDescriptor:
    """QUANTIZE_LINEAR, DEQUANTIZE_LINEAR or DYNAMIC_QUANTIZE_LINEAR (backend_api.h). The scale's
    shape picks per-tensor or per-axis (along `axis`) quantization; block_size >= 1 makes it
    blocked along `axis`. precision: the float type QUANTIZE_LINEAR divides and
    DEQUANTIZE_LINEAR multiplies in (float32 for DYNAMIC_QUANTIZE_LINEAR, which takes axis 0)."""

    op: QuantizationOp
    axis: int = 0
    block_size: int = 0
    precision: DataType = DataType.FLOAT32

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(QuantizationOp, self.op, "quantization operation"))
        object.__setattr__(self, "precision", DataType.from_any(self.precision))
        if not self.precision.is_float:
            raise ValueError(f"precision must be a float type, got {self.precision.numpy_name}")
        if int(self.block_size) < 0:
            raise ValueError(f"block_size must be >= 0 (0: not blocked), got {self.block_size}")


@c_struct("pn_quantized_convolution_desc")
@dataclass(frozen=True)
class QuantizedConvolutionDescriptor:
    """A forward 1-, 2- or 3-D convolution of int8/uint8 tensors (NC[D]HW): INTEGER gives the
    int32 sums, QLINEAR requantizes them (backend_api.h); one value per spatial axis."""

    op: QuantizedOp = QuantizedOp.INTEGER
    strides: tuple[int, ...] = c_array("spatial_rank", "strides", default=(1, 1))
    pads_begin: tuple[int, ...] = c_array("spatial_rank", "pads_begin", default=(0, 0))
    pads_end: tuple[int, ...] = c_array("spatial_rank", "pads_end", default=(0, 0))
    dilations: tuple[int, ...] = c_array("spatial_rank", "dilations", default=(1, 1))
    groups: int = 1
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(QuantizedOp, self.op, "quantized operation"))
        rank = len(tuple(self.strides)) if not isinstance(self.strides, int) else 2
        if not 1 <= rank <= 3:
            raise ValueError(f"a convolution has 1 to 3 spatial axes, got strides {self.strides}")
        object.__setattr__(self, "strides", _spatial(self.strides, rank, "strides", 1))
        object.__setattr__(self, "pads_begin", _spatial(self.pads_begin, rank, "pads_begin", 0))
        object.__setattr__(self, "pads_end", _spatial(self.pads_end, rank, "pads_end", 0))
        object.__setattr__(self, "dilations", _spatial(self.dilations, rank, "dilations", 1))
        if int(self.groups) < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")
        if self.has_bias and self.op is not QuantizedOp.QLINEAR:
            raise ValueError("only a QLINEAR quantized convolution takes a bias")

    @property
    def spatial_rank(self) -> int:
        return len(self.strides)


@c_struct("pn_quantized_matmul_desc")
@dataclass(frozen=True)
class QuantizedMatMulDescriptor:
    """A NumPy matmul of int8/uint8 tensors: INTEGER gives the int32 sums, QLINEAR requantizes
    them (backend_api.h)."""

    op: QuantizedOp = QuantizedOp.INTEGER

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(QuantizedOp, self.op, "quantized operation"))


@c_struct("pn_grid_sample_desc")
@dataclass(frozen=True)
class GridSampleDescriptor:
    """ONNX GridSample: nearest, linear or cubic sampling at normalized grid coordinates."""

    mode: ResizeMode = ResizeMode.LINEAR
    padding: GridPadding = GridPadding.ZEROS
    align_corners: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _enum(ResizeMode, self.mode, "grid sample mode"))
        object.__setattr__(self, "padding", _enum(GridPadding, self.padding, "grid padding"))


@c_struct("pn_roi_align_desc")
@dataclass(frozen=True)
class RoiAlignDescriptor:
    """ONNX RoiAlign: mode average or max over bilinear samples of each output bin."""

    mode: PoolingKind = PoolingKind.AVERAGE
    output_height: int = 1
    output_width: int = 1
    sampling_ratio: int = 0
    spatial_scale: float = 1.0
    half_pixel: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _enum(PoolingKind, self.mode, "RoiAlign mode"))
        if self.mode not in (PoolingKind.AVERAGE, PoolingKind.MAX):
            raise ValueError(f"RoiAlign's mode is average or max, got {self.mode.name.lower()}")
        if int(self.output_height) < 1 or int(self.output_width) < 1:
            raise ValueError(f"output_height and output_width must be >= 1, got {self.output_height} and "
                             f"{self.output_width}")
        if int(self.sampling_ratio) < 0:
            raise ValueError(f"sampling_ratio must be >= 0 (0: adaptive), got {self.sampling_ratio}")


@c_struct("pn_deformable_convolution_desc")
@dataclass(frozen=True)
class DeformableConvolutionDescriptor:
    """ONNX DeformConv, 1 to 3 spatial axes; one value per spatial axis."""

    strides: tuple[int, ...] = c_array("spatial_rank", "strides", default=(1, 1))
    pads_begin: tuple[int, ...] = c_array("spatial_rank", "pads_begin", default=(0, 0))
    pads_end: tuple[int, ...] = c_array("spatial_rank", "pads_end", default=(0, 0))
    dilations: tuple[int, ...] = c_array("spatial_rank", "dilations", default=(1, 1))
    groups: int = 1
    offset_groups: int = 1
    has_bias: bool = c_flag("flags", PN_LAYER_FLAG_HAS_BIAS)
    has_mask: bool = c_flag("flags", PN_DEFORMABLE_HAS_MASK)

    def __post_init__(self) -> None:
        rank = len(tuple(self.strides)) if not isinstance(self.strides, int) else 2
        if not 1 <= rank <= 3:
            raise ValueError(f"a deformable convolution has 1 to 3 spatial axes, got strides {self.strides}")
        object.__setattr__(self, "strides", _spatial(self.strides, rank, "strides", 1))
        object.__setattr__(self, "pads_begin", _spatial(self.pads_begin, rank, "pads_begin", 0))
        object.__setattr__(self, "pads_end", _spatial(self.pads_end, rank, "pads_end", 0))
        object.__setattr__(self, "dilations", _spatial(self.dilations, rank, "dilations", 1))
        if int(self.groups) < 1 or int(self.offset_groups) < 1:
            raise ValueError(f"groups and offset_groups must be >= 1, got {self.groups} and {self.offset_groups}")

    @property
    def spatial_rank(self) -> int:
        return len(self.strides)


@c_struct("pn_spectral_desc")
@dataclass(frozen=True)
class SpectralDescriptor:
    """ONNX DFT (axis, inverse, onesided, length = dft_length) or STFT (length = the frame
    length, frame_step, onesided, has_window)."""

    op: SpectralOp
    length: int
    axis: int = 0
    inverse: bool = False
    onesided: bool = False
    frame_step: int = 0
    has_window: bool = c_flag("flags", PN_SPECTRAL_HAS_WINDOW)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(SpectralOp, self.op, "spectral operation"))
        if int(self.length) < 1:
            raise ValueError(f"the transform length must be >= 1, got {self.length}")
        if self.op is SpectralOp.STFT and int(self.frame_step) < 1:
            raise ValueError(f"STFT's frame_step must be >= 1, got {self.frame_step}")


@c_struct("pn_linear_algebra_desc")
@dataclass(frozen=True)
class LinearAlgebraDescriptor:
    op: LinearAlgebraOp = LinearAlgebraOp.DETERMINANT

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(LinearAlgebraOp, self.op, "linear algebra operation"))


@c_struct("pn_random_desc")
@dataclass(frozen=True)
class RandomDescriptor:
    """Philox4x64-10 values (backend_api.h): uniform in [a, b), normal of mean a and standard
    deviation b, or multinomial draws; `advance`: new values on every run."""

    op: RandomOp
    seed: int = 0
    a: float = 0.0
    b: float = 1.0
    advance: bool = c_flag("flags", PN_RANDOM_ADVANCE)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(RandomOp, self.op, "random operation"))
        if not 0 <= int(self.seed) < 2 ** 64:
            raise ValueError(f"the seed is a 64-bit unsigned integer, got {self.seed}")


@c_struct("pn_data_dependent_desc")
@dataclass(frozen=True)
class DataDependentDescriptor:
    """NonZero, Unique, NonMaxSuppression or Compress (backend_api.h, "Data-dependent layers"):
    outputs sized by an upper bound, the actual dims reported at execute."""

    op: DataDependentOp = DataDependentOp.NON_ZERO
    has_axis: bool = False
    axis: int = 0
    sorted: bool = False
    center_point_box: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", _enum(DataDependentOp, self.op, "data-dependent operation"))


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
    ElementwiseUnaryDescriptor,
    ReduceDescriptor,
    NormalizationDescriptor,
    GatherDescriptor,
    ScatterDescriptor,
    SliceDescriptor,
    SplitDescriptor,
    PadDescriptor,
    ResizeDescriptor,
    CastDescriptor,
    ConvolutionDescriptor,
    PoolingDescriptor,
    RecurrentDescriptor,
    TopKDescriptor,
    CumulativeDescriptor,
    OneHotDescriptor,
    TriangularDescriptor,
    QuantizationDescriptor,
    QuantizedConvolutionDescriptor,
    QuantizedMatMulDescriptor,
    GridSampleDescriptor,
    RoiAlignDescriptor,
    DeformableConvolutionDescriptor,
    SpectralDescriptor,
    LinearAlgebraDescriptor,
    RandomDescriptor,
    DataDependentDescriptor,
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
    LayerKind.ELEMENTWISE_UNARY: ElementwiseUnaryDescriptor,
    LayerKind.SELECT: None,
    LayerKind.REDUCE: ReduceDescriptor,
    LayerKind.NORMALIZATION: NormalizationDescriptor,
    LayerKind.GATHER: GatherDescriptor,
    LayerKind.SCATTER: ScatterDescriptor,
    LayerKind.SLICE: SliceDescriptor,
    LayerKind.SPLIT: SplitDescriptor,
    LayerKind.PAD: PadDescriptor,
    LayerKind.EXPAND: None,
    LayerKind.RESIZE: ResizeDescriptor,
    LayerKind.CAST: CastDescriptor,
    LayerKind.CONVOLUTION: ConvolutionDescriptor,
    LayerKind.POOLING: PoolingDescriptor,
    LayerKind.RECURRENT: RecurrentDescriptor,
    LayerKind.TOP_K: TopKDescriptor,
    LayerKind.CUMULATIVE: CumulativeDescriptor,
    LayerKind.ONE_HOT: OneHotDescriptor,
    LayerKind.TRIANGULAR: TriangularDescriptor,
    LayerKind.QUANTIZATION: QuantizationDescriptor,
    LayerKind.QUANTIZED_CONVOLUTION: QuantizedConvolutionDescriptor,
    LayerKind.QUANTIZED_MATMUL: QuantizedMatMulDescriptor,
    LayerKind.GRID_SAMPLE: GridSampleDescriptor,
    LayerKind.ROI_ALIGN: RoiAlignDescriptor,
    LayerKind.DEFORMABLE_CONVOLUTION: DeformableConvolutionDescriptor,
    LayerKind.SPECTRAL: SpectralDescriptor,
    LayerKind.LINEAR_ALGEBRA: LinearAlgebraDescriptor,
    LayerKind.BITCAST: None,
    LayerKind.RANDOM: RandomDescriptor,
    LayerKind.DATA_DEPENDENT: DataDependentDescriptor,
}
