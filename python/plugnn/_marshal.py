"""Conversions between plugnn's Python layer descriptions and the C structs of the ABI.

`to_c_*` functions return cdata and append every buffer the cdata points into to a
`keep` list, which the caller holds for as long as the C side may read it.
`from_c_*` functions copy what a backend returned into Python objects and read a
field only when the backend's struct_size covers it.
"""

from __future__ import annotations

import weakref
from typing import Any

from plugnn import descriptors as d
from plugnn._abi import NULL, covers, ffi
from plugnn.errors import PlugnnError
from plugnn.layers import LayerSpec
from plugnn.tensor import MAX_DIMS, TensorInfo

FLAG_HAS_BIAS = 0x1
FLAG_HAS_ADDEND = 0x2


def _new(ctype: str, **fields: Any) -> Any:
    return ffi.new(ctype + "*", {"struct_size": ffi.sizeof(ctype), **fields})


# ---- tensors ----------------------------------------------------------------


def fill_tensor_info(c_info: Any, info: TensorInfo) -> None:
    c_info.struct_size = ffi.sizeof("pn_tensor_info")
    c_info.dtype = int(info.dtype)
    c_info.rank = info.rank
    for i, dim in enumerate(info.shape):
        c_info.dims[i] = dim
    c_info.quant_scale = info.quant_scale
    c_info.quant_zero_point = info.quant_zero_point


def to_c_tensor_infos(infos: tuple[TensorInfo, ...], keep: list[Any]) -> Any:
    array = ffi.new("pn_tensor_info[]", max(len(infos), 1))
    for i, info in enumerate(infos):
        fill_tensor_info(array[i], info)
    keep.append(array)
    return array


def from_c_tensor_info(c_info: Any, what: str) -> TensorInfo:
    if not covers(c_info, "pn_tensor_info", "quant_zero_point"):
        raise PlugnnError(f"{what}: pn_tensor_info struct_size {c_info.struct_size} is too small")
    rank = int(c_info.rank)
    if rank > MAX_DIMS:
        raise PlugnnError(f"{what}: rank {rank} exceeds {MAX_DIMS}")
    try:
        return TensorInfo(
            tuple(int(c_info.dims[i]) for i in range(rank)),
            int(c_info.dtype),
            float(c_info.quant_scale),
            int(c_info.quant_zero_point),
        )
    except ValueError as exc:
        raise PlugnnError(f"{what}: {exc}") from None


# ---- descriptors to C ---------------------------------------------------------


def _activation(act: d.ActivationDescriptor | None, keep: list[Any]) -> Any:
    if act is None:
        return NULL
    c = _new("pn_activation_desc", kind=int(act.kind), alpha=act.alpha, beta=act.beta)
    keep.append(c)
    return c


def _flags(has_bias: bool, has_addend: bool = False) -> int:
    return (FLAG_HAS_BIAS if has_bias else 0) | (FLAG_HAS_ADDEND if has_addend else 0)


def to_c_descriptor(desc: d.Descriptor, keep: list[Any]) -> Any:
    """The C descriptor for `desc` (NULL for None)."""
    if desc is None:
        return NULL
    c = _descriptor_builders[type(desc)](desc, keep)
    keep.append(c)
    return c


def _conv(x: d.Convolution2dDescriptor, keep: list[Any]) -> Any:
    return _new(
        "pn_convolution_2d_desc", layout=int(x.layout),
        stride_h=x.stride[0], stride_w=x.stride[1],
        pad_top=x.padding[0], pad_left=x.padding[1], pad_bottom=x.padding[2], pad_right=x.padding[3],
        dilation_h=x.dilation[0], dilation_w=x.dilation[1], groups=int(x.groups),
        flags=_flags(x.has_bias, x.has_addend), fused_activation=_activation(x.fused_activation, keep),
    )


def _pool(x: d.Pooling2dDescriptor, keep: list[Any]) -> Any:
    return _new(
        "pn_pooling_2d_desc", kind=int(x.kind), layout=int(x.layout),
        kernel_h=x.kernel[0], kernel_w=x.kernel[1], stride_h=x.stride[0], stride_w=x.stride[1],
        pad_top=x.padding[0], pad_left=x.padding[1], pad_bottom=x.padding[2], pad_right=x.padding[3],
        dilation_h=x.dilation[0], dilation_w=x.dilation[1], rounding=int(x.rounding),
        padding_method=int(x.padding_method), p=x.p,
    )


def _precompiled(x: d.PrecompiledDescriptor, keep: list[Any]) -> Any:
    label = ffi.new("char[]", x.label.encode())
    keep.append(label)
    payload = x.payload.pointer if isinstance(x.payload, NativePayload) else NULL
    return _new("pn_precompiled_desc", payload=payload, release_payload=NULL, label=label)


_descriptor_builders: dict[type, Any] = {
    d.ActivationDescriptor: lambda x, keep: _new(
        "pn_activation_desc", kind=int(x.kind), alpha=x.alpha, beta=x.beta),
    d.Convolution2dDescriptor: _conv,
    d.Pooling2dDescriptor: _pool,
    d.ElementwiseBinaryDescriptor: lambda x, keep: _new(
        "pn_elementwise_binary_desc", op=int(x.op), fused_activation=_activation(x.fused_activation, keep)),
    d.ElementwiseVariadicDescriptor: lambda x, keep: _new("pn_elementwise_variadic_desc", op=int(x.op)),
    d.FullyConnectedDescriptor: lambda x, keep: _new(
        "pn_fully_connected_desc", transpose_a=int(x.transpose_a), transpose_b=int(x.transpose_b),
        alpha=x.alpha, beta=x.beta, flags=_flags(x.has_bias, x.has_addend),
        fused_activation=_activation(x.fused_activation, keep)),
    d.SoftmaxDescriptor: lambda x, keep: _new("pn_softmax_desc", axis=x.axis),
    d.BatchNormalizationDescriptor: lambda x, keep: _new(
        "pn_batch_normalization_desc", layout=int(x.layout), epsilon=x.epsilon),
    d.LrnDescriptor: lambda x, keep: _new(
        "pn_lrn_desc", layout=int(x.layout), size=x.size, alpha=x.alpha, beta=x.beta, bias=x.bias),
    d.ConcatDescriptor: lambda x, keep: _new("pn_concat_desc", axis=x.axis),
    d.TransposeDescriptor: lambda x, keep: _new(
        "pn_transpose_desc", rank=len(x.perm), perm=list(x.perm) + [0] * (MAX_DIMS - len(x.perm))),
    d.PrecompiledDescriptor: _precompiled,
}


# ---- layers to C ----------------------------------------------------------------


def to_c_layer(spec: LayerSpec, keep: list[Any], c_layer: Any = None) -> Any:
    """Fill `c_layer` (or a new pn_layer) from `spec`."""
    if c_layer is None:
        c_layer = ffi.new("pn_layer*")
        keep.append(c_layer)
    name = ffi.new("char[]", spec.name.encode())
    keep.append(name)
    c_layer.struct_size = ffi.sizeof("pn_layer")
    c_layer.kind = int(spec.kind)
    c_layer.name = name
    c_layer.descriptor = to_c_descriptor(spec.descriptor, keep)
    c_layer.num_inputs = len(spec.inputs)
    c_layer.inputs = to_c_tensor_infos(spec.inputs, keep)
    c_layer.num_outputs = len(spec.outputs)
    c_layer.outputs = to_c_tensor_infos(spec.outputs, keep)
    c_layer.constant_data = _constant_pointers(spec, keep)
    c_layer.input_ids = _ids(spec.input_ids, keep)
    c_layer.output_ids = _ids(spec.output_ids, keep)
    c_layer.id = spec.id
    return c_layer


def _ids(ids: tuple[int, ...], keep: list[Any]) -> Any:
    if not ids:
        return NULL
    array = ffi.new("uint32_t[]", list(ids))
    keep.append(array)
    return array


def _constant_pointers(spec: LayerSpec, keep: list[Any]) -> Any:
    if not any(c is not None for c in spec.constants):
        return NULL
    pointers = ffi.new("void*[]", len(spec.inputs))
    for i, constant in enumerate(spec.constants):
        if constant is not None:
            buffer = ffi.from_buffer(constant)
            keep.append(buffer)
            pointers[i] = buffer
    keep.append(pointers)
    return pointers


# ---- from C: what a backend returns ------------------------------------------------


class NativePayload:
    """A PRECOMPILED layer's payload, owned by plugnn once received: released exactly once."""

    def __init__(self, pointer: Any, release: Any, keepalive: Any) -> None:
        self.pointer = pointer
        self._finalizer = (
            weakref.finalize(self, _release_payload, release, pointer, keepalive)
            if release != NULL else None
        )

    def release(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


def _release_payload(release: Any, pointer: Any, keepalive: Any) -> None:
    release(pointer)


def _read_struct(c: Any, ctype: str, fields: tuple[str, ...], what: str) -> dict[str, Any]:
    if c == NULL:
        raise PlugnnError(f"{what}: NULL descriptor")
    c = ffi.cast(ctype + "*", c)
    if not covers(c, ctype, fields[-1]):
        raise PlugnnError(f"{what}: {ctype} struct_size {c.struct_size} is too small")
    return {name: getattr(c, name) for name in fields}


def _read_activation(c: Any, what: str) -> d.ActivationDescriptor | None:
    if c == NULL:
        return None
    f = _read_struct(c, "pn_activation_desc", ("kind", "alpha", "beta"), what)
    return d.ActivationDescriptor(int(f["kind"]), float(f["alpha"]), float(f["beta"]))


def from_c_descriptor(kind: d.LayerKind, c: Any, what: str, keepalive: Any) -> d.Descriptor:
    """Copy a backend-written descriptor of `kind` into its Python dataclass."""
    reader = _descriptor_readers.get(kind)
    if reader is None:
        return None
    try:
        return reader(c, what, keepalive)
    except (ValueError, TypeError) as exc:
        raise PlugnnError(f"{what}: invalid descriptor: {exc}") from None


def _conv_from_c(c: Any, what: str, keepalive: Any) -> d.Convolution2dDescriptor:
    f = _read_struct(c, "pn_convolution_2d_desc", (
        "layout", "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right",
        "dilation_h", "dilation_w", "groups", "flags", "fused_activation"), what)
    return d.Convolution2dDescriptor(
        stride=(f["stride_h"], f["stride_w"]),
        padding=(f["pad_top"], f["pad_left"], f["pad_bottom"], f["pad_right"]),
        dilation=(f["dilation_h"], f["dilation_w"]), groups=int(f["groups"]), layout=int(f["layout"]),
        has_bias=bool(f["flags"] & FLAG_HAS_BIAS), has_addend=bool(f["flags"] & FLAG_HAS_ADDEND),
        fused_activation=_read_activation(f["fused_activation"], what))


def _pool_from_c(c: Any, what: str, keepalive: Any) -> d.Pooling2dDescriptor:
    f = _read_struct(c, "pn_pooling_2d_desc", (
        "kind", "layout", "kernel_h", "kernel_w", "stride_h", "stride_w", "pad_top", "pad_left",
        "pad_bottom", "pad_right", "dilation_h", "dilation_w", "rounding", "padding_method", "p"), what)
    return d.Pooling2dDescriptor(
        kind=int(f["kind"]), kernel=(f["kernel_h"], f["kernel_w"]), stride=(f["stride_h"], f["stride_w"]),
        padding=(f["pad_top"], f["pad_left"], f["pad_bottom"], f["pad_right"]),
        dilation=(f["dilation_h"], f["dilation_w"]), rounding=int(f["rounding"]),
        padding_method=int(f["padding_method"]), layout=int(f["layout"]), p=float(f["p"]))


def _binary_from_c(c: Any, what: str, keepalive: Any) -> d.ElementwiseBinaryDescriptor:
    f = _read_struct(c, "pn_elementwise_binary_desc", ("op", "fused_activation"), what)
    return d.ElementwiseBinaryDescriptor(int(f["op"]), _read_activation(f["fused_activation"], what))


def _fc_from_c(c: Any, what: str, keepalive: Any) -> d.FullyConnectedDescriptor:
    f = _read_struct(c, "pn_fully_connected_desc", (
        "transpose_a", "transpose_b", "alpha", "beta", "flags", "fused_activation"), what)
    return d.FullyConnectedDescriptor(
        bool(f["transpose_a"]), bool(f["transpose_b"]), float(f["alpha"]), float(f["beta"]),
        bool(f["flags"] & FLAG_HAS_BIAS), _read_activation(f["fused_activation"], what),
        bool(f["flags"] & FLAG_HAS_ADDEND))


def _precompiled_from_c(c: Any, what: str, keepalive: Any) -> d.PrecompiledDescriptor:
    f = _read_struct(c, "pn_precompiled_desc", ("payload", "release_payload", "label"), what)
    label = ffi.string(f["label"]).decode("utf-8", "replace") if f["label"] != NULL else "precompiled"
    return d.PrecompiledDescriptor(label, NativePayload(f["payload"], f["release_payload"], keepalive))


def _simple(ctype: str, fields: tuple[str, ...], build: Any) -> Any:
    return lambda c, what, keepalive: build(_read_struct(c, ctype, fields, what))


_descriptor_readers: dict[d.LayerKind, Any] = {
    d.LayerKind.CONVOLUTION_2D: _conv_from_c,
    d.LayerKind.POOLING_2D: _pool_from_c,
    d.LayerKind.ELEMENTWISE_BINARY: _binary_from_c,
    d.LayerKind.ELEMENTWISE_VARIADIC: _simple(
        "pn_elementwise_variadic_desc", ("op",), lambda f: d.ElementwiseVariadicDescriptor(int(f["op"]))),
    d.LayerKind.ACTIVATION: lambda c, what, keepalive: _read_activation(c, what),
    d.LayerKind.FULLY_CONNECTED: _fc_from_c,
    d.LayerKind.SOFTMAX: _simple("pn_softmax_desc", ("axis",), lambda f: d.SoftmaxDescriptor(int(f["axis"]))),
    d.LayerKind.BATCH_NORMALIZATION: _simple(
        "pn_batch_normalization_desc", ("layout", "epsilon"),
        lambda f: d.BatchNormalizationDescriptor(float(f["epsilon"]), int(f["layout"]))),
    d.LayerKind.LOCAL_RESPONSE_NORMALIZATION: _simple(
        "pn_lrn_desc", ("layout", "size", "alpha", "beta", "bias"),
        lambda f: d.LrnDescriptor(int(f["size"]), float(f["alpha"]), float(f["beta"]), float(f["bias"]),
                                  int(f["layout"]))),
    d.LayerKind.CONCAT: _simple("pn_concat_desc", ("axis",), lambda f: d.ConcatDescriptor(int(f["axis"]))),
    d.LayerKind.TRANSPOSE: _simple(
        "pn_transpose_desc", ("rank", "perm"),
        lambda f: d.TransposeDescriptor(tuple(int(f["perm"][i]) for i in range(min(int(f["rank"]), MAX_DIMS))))),
    d.LayerKind.PRECOMPILED: _precompiled_from_c,
}


def from_c_layer(c_layer: Any, what: str, keepalive: Any) -> LayerSpec:
    """Copy a backend-written pn_layer (a substitution's replacement)."""
    if not covers(c_layer, "pn_layer", "output_ids"):
        raise PlugnnError(f"{what}: pn_layer struct_size {c_layer.struct_size} is too small")
    try:
        kind = d.LayerKind(int(c_layer.kind))
    except ValueError:
        raise PlugnnError(f"{what}: unknown layer kind {int(c_layer.kind)}") from None
    name = ffi.string(c_layer.name).decode("utf-8", "replace") if c_layer.name != NULL else ""
    n_in, n_out = int(c_layer.num_inputs), int(c_layer.num_outputs)
    if (n_in and c_layer.input_ids == NULL) or (n_out and c_layer.output_ids == NULL):
        raise PlugnnError(f"{what}: a replacement layer must give input_ids and output_ids")
    inputs = tuple(from_c_tensor_info(c_layer.inputs + i, f"{what} input {i}") for i in range(n_in)) \
        if c_layer.inputs != NULL else ()
    outputs = tuple(from_c_tensor_info(c_layer.outputs + i, f"{what} output {i}") for i in range(n_out)) \
        if c_layer.outputs != NULL else ()
    return LayerSpec(
        kind=kind, name=name,
        descriptor=from_c_descriptor(kind, c_layer.descriptor, what, keepalive),
        inputs=inputs, outputs=outputs,
        input_ids=tuple(int(c_layer.input_ids[i]) for i in range(n_in)),
        output_ids=tuple(int(c_layer.output_ids[i]) for i in range(n_out)),
    )
