"""Conversions between plugnn's Python layer descriptions and the C structs of the ABI.

`to_c_*` functions return cdata and append every buffer the cdata points into to a
`keep` list, which the caller holds for as long as the C side may read it.
`from_c_*` functions copy what a backend returned into Python objects and read a
field only when the backend's struct_size covers it.
"""

from __future__ import annotations

import weakref
from dataclasses import fields
from typing import Any

from plugnn import descriptors as d
from plugnn._abi import NULL, covers, ffi
from plugnn._abi_defs import DESCRIPTOR_FIELDS
from plugnn.errors import PlugnnError
from plugnn.layers import LayerSpec
from plugnn.symbolic import hint_of
from plugnn.tensor import MAX_DIMS, TensorInfo

# ---- tensors ----------------------------------------------------------------


def fill_tensor_info(c_info: Any, info: TensorInfo) -> None:
    c_info.struct_size = ffi.sizeof("pn_tensor_info")
    c_info.dtype = int(info.dtype)
    c_info.rank = info.rank
    for i, dim in enumerate(info.shape):
        # A symbolic dim is asked about at its hint (optimize time); the backend judges every
        # binding's shapes again when its workloads are made or re-sized.
        c_info.dims[i] = dim if type(dim) is int else hint_of(dim)
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
#
# Driven by DESCRIPTOR_FIELDS (the header's field table, generated) and each descriptor
# dataclass's field mappings (descriptors.c_mapping): one loop for every kind.


def to_c_descriptor(desc: d.Descriptor, keep: list[Any]) -> Any:
    """The C descriptor for `desc` (NULL for None)."""
    if desc is None:
        return NULL
    ctype, c_types, size, layout = _descriptor_layout(type(desc))
    values: dict[str, Any] = {"struct_size": size}
    for name, mapping in layout:
        value = getattr(desc, name)
        if mapping.codec == "value":
            values[mapping.names[0]] = _c_value(value, c_types[mapping.names[0]], keep)
        elif mapping.codec == "fields":
            values.update(zip(mapping.names, (hint_of(v) for v in value)))
        elif mapping.codec == "flag":
            values[mapping.names[0]] = values.get(mapping.names[0], 0) | (mapping.bit if value else 0)
        elif mapping.codec == "array":
            values[mapping.names[0]] = len(value)
            values[mapping.names[1]] = [_c_item(v, c_types[mapping.names[1]]) for v in value]
        elif mapping.codec == "activations":
            count, kinds, alphas, betas = mapping.names
            values[count] = len(value)
            values[kinds] = [int(a.kind) for a in value]
            values[alphas] = [float(a.alpha) for a in value]
            values[betas] = [float(a.beta) for a in value]
        else:  # "payload": a PRECOMPILED layer handed back to the backend that made it
            values["payload"] = value.pointer if isinstance(value, NativePayload) else NULL
    c = ffi.new(ctype + "*", values)
    keep.append(c)
    return c


_LAYOUTS: dict[type, tuple[str, dict[str, str], int, list[tuple[str, Any]]]] = {}


def _descriptor_layout(desc_type: type) -> tuple[str, dict[str, str], int, list[tuple[str, Any]]]:
    """A descriptor class's C struct, its fields' C types, its size and each Python field's
    name and mapping (descriptors.c_mapping): made once per class (every layer asks for it)."""
    layout = _LAYOUTS.get(desc_type)
    if layout is None:
        ctype = desc_type.c_struct  # type: ignore[attr-defined]
        layout = _LAYOUTS[desc_type] = (ctype, dict(DESCRIPTOR_FIELDS[ctype]), ffi.sizeof(ctype),
                                        [(f.name, d.c_mapping(f)) for f in fields(desc_type)])  # type: ignore[arg-type]
    return layout


def _c_item(value: Any, c_array_type: str) -> Any:
    """An array element as its C type wants it ("float[8]": a float, else an integer)."""
    return float(value) if c_array_type.startswith(("float", "double")) else hint_of(value)


def _c_value(value: Any, c_type: str, keep: list[Any]) -> Any:
    if c_type == "pn_activation_desc *":
        return to_c_descriptor(value, keep)
    if c_type == "char *":
        text = ffi.new("char[]", value.encode())
        keep.append(text)
        return text
    if c_type == "float":
        return float(value)
    if c_type == "double":
        return float(value)
    return hint_of(value)


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


def from_c_descriptor(kind: d.LayerKind, c: Any, what: str, keepalive: Any) -> d.Descriptor:
    """Copy a backend-written descriptor of `kind` into its Python dataclass. A field a later
    minor version appended (mapping.since > 0) reads as absent past the writer's struct_size;
    any other field must be covered."""
    desc_type = d.DESCRIPTOR_TYPES.get(kind)
    if desc_type is None:
        return None
    try:
        return _read_descriptor(desc_type, c, what, keepalive)
    except (ValueError, TypeError) as exc:
        raise PlugnnError(f"{what}: invalid descriptor: {exc}") from None


def _read_descriptor(desc_type: Any, c: Any, what: str, keepalive: Any) -> Any:
    ctype = desc_type.c_struct
    if c == NULL:
        raise PlugnnError(f"{what}: NULL {ctype}")
    c = ffi.cast(ctype + "*", c)
    c_types = dict(DESCRIPTOR_FIELDS[ctype])
    kwargs: dict[str, Any] = {}
    for f in fields(desc_type):
        mapping = d.c_mapping(f)
        names = mapping.names

        def read(name: str, appended: bool = mapping.since > 0) -> Any:
            if covers(c, ctype, name):
                return getattr(c, name)
            if appended:
                return None
            raise PlugnnError(f"{what}: {ctype} struct_size {c.struct_size} is too small")

        if mapping.codec == "value":
            kwargs[f.name] = _py_value(read(names[0]), c_types[names[0]], what, keepalive)
        elif mapping.codec == "fields":
            kwargs[f.name] = tuple(int(read(n) or 0) for n in names)
        elif mapping.codec == "flag":
            kwargs[f.name] = bool(int(read(names[0]) or 0) & mapping.bit)
        elif mapping.codec == "array":
            count, array = int(read(names[0]) or 0), read(names[1])
            kwargs[f.name] = () if array is None else tuple(
                _c_item(array[i], c_types[names[1]]) for i in range(min(count, len(array))))
        elif mapping.codec == "activations":
            count, kinds, alphas, betas = (read(n) for n in names)
            n = min(int(count or 0), len(kinds)) if kinds is not None else 0
            kwargs[f.name] = tuple(d.ActivationDescriptor(int(kinds[i]), float(alphas[i]), float(betas[i]))
                                   for i in range(n))
        else:  # "payload"
            payload, release = read("payload"), read("release_payload")
            kwargs[f.name] = NativePayload(payload if payload is not None else NULL,
                                           release if release is not None else NULL, keepalive)
    return desc_type(**kwargs)


def _py_value(value: Any, c_type: str, what: str, keepalive: Any) -> Any:
    if c_type == "pn_activation_desc *":
        return None if value is None or value == NULL else _read_descriptor(
            d.ActivationDescriptor, value, what, keepalive)
    if c_type == "char *":
        return "" if value is None or value == NULL else ffi.string(value).decode("utf-8", "replace")
    if c_type == "float":
        return float(value or 0.0)
    if c_type == "double":
        return float(value or 0.0)
    if c_type == "pn_bool":
        return bool(value)
    return int(value or 0)


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
