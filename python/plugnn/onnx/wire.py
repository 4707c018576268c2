"""A model's large weights read once, straight into arrays: the protobuf wire format of a
ModelProto walked far enough to find its main graph's initializers.

Parsing a model with protobuf copies every weight into the message, and reading it out
(`numpy_helper.to_array`) copies it again; with the file's own read that is three copies of
every weight before the first layer is built (ResNet-50: 100 MB, about 55 ms each on the
machines of docs/performance.md). `split_weights(buffer)` walks the serialized model instead
(ModelProto field 7 `graph`, GraphProto field 5 `initializer`, TensorProto fields 1 `dims`, 2
`data_type`, 9 `raw_data`, 13/14 external data, 3 `segment`) and returns

- the model's bytes with the `raw_data` of every large main-graph initializer cut out (what
  protobuf then parses: names, nodes, small tensors; kilobytes), and
- where each cut payload lies in the buffer (`HeldWeight`: its initializer's position in the
  graph, element type, dims, offset and length).

`read_held(source, held)` then copies each payload once into an aligned array of its own
(`os.preadv` from the file, or one slice copy from a bytes-like model). Only what is certain is
held: a raw_data of a plain numeric type whose length is exactly dims x element size, in a
tensor without external data or segments; anything else (and any buffer the walker cannot
follow) is left to protobuf, whose parse reports malformed models as before.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

import numpy as np

MIN_HELD_BYTES = 1024  # smaller payloads stay in the parsed message (scales, shapes, masks)

# ONNX TensorProto.DataType -> little-endian numpy type, for the types whose raw_data is one
# element after another (packed 4-bit and 8-bit float types are left to numpy_helper).
RAW_TYPES: dict[int, str] = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?",
                              10: "<f2", 11: "<f8", 12: "<u4", 13: "<u8"}

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_SEGMENT, _TENSOR_RAW = 1, 2, 3, 9
_TENSOR_EXTERNAL, _TENSOR_LOCATION = 13, 14


class HeldWeight(NamedTuple):
    """A main-graph initializer whose raw_data was cut out: it is `graph.initializer[index]` of
    the parsed stripped model; its payload is `length` bytes at `offset` of the buffer."""

    index: int
    dtype: str
    dims: tuple[int, ...]
    offset: int
    length: int


class _Unfollowable(Exception):
    """The walker met what it does not follow (a group, a truncated field): protobuf decides."""


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Unfollowable
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: memoryview, start: int, end: int) -> Any:
    """(field number, wire type, field start, value start, value end) of every field in
    buf[start:end]; a varint's value is (value start, value end) of its bytes."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value_start = pos
            _, pos = _varint(buf, pos, end)
        elif wire == 1:
            value_start, pos = pos, pos + 8
        elif wire == 2:
            length, value_start = _varint(buf, pos, end)
            pos = value_start + length
        elif wire == 5:
            value_start, pos = pos, pos + 4
        else:
            raise _Unfollowable  # groups (3, 4) and invalid wire types
        if pos > end or number == 0:
            raise _Unfollowable
        yield number, wire, field_start, value_start, pos


def _tensor(buf: memoryview, start: int, end: int) -> tuple[list[tuple[int, int]], HeldWeight | None]:
    """The byte ranges of a TensorProto without its raw_data, and the payload when it is held
    (index filled in by the caller)."""
    dims: list[int] = []
    data_type = 0
    raw: tuple[int, int, int] | None = None  # field start, value start, value end
    plain = True
    for number, wire, field_start, value_start, value_end in _fields(buf, start, end):
        if number == _TENSOR_DIMS:
            if wire == 0:
                dims.append(_varint(buf, value_start, value_end)[0])
            elif wire == 2:
                pos = value_start
                while pos < value_end:
                    dim, pos = _varint(buf, pos, value_end)
                    dims.append(dim)
            else:
                plain = False
        elif number == _TENSOR_TYPE and wire == 0:
            data_type = _varint(buf, value_start, value_end)[0]
        elif number == _TENSOR_RAW and wire == 2:
            if raw is not None:
                plain = False  # raw_data given twice: protobuf keeps the last, let it
            raw = (field_start, value_start, value_end)
        elif number in (_TENSOR_SEGMENT, _TENSOR_EXTERNAL, _TENSOR_LOCATION):
            plain = False
    if raw is None or not plain or data_type not in RAW_TYPES:
        return [(start, end)], None
    length = raw[2] - raw[1]
    dtype = np.dtype(RAW_TYPES[data_type])
    if any(d >= 1 << 62 for d in dims) or length < MIN_HELD_BYTES \
            or length != int(np.prod(dims, dtype=object)) * dtype.itemsize:
        return [(start, end)], None  # small, or a size mismatch numpy_helper reports in its words
    return [(start, raw[0]), (raw[2], end)], HeldWeight(-1, RAW_TYPES[data_type], tuple(dims), raw[1], length)


def split_weights(data: Any) -> tuple[bytes, list[HeldWeight]] | None:
    """(the model without the raw_data of its large main-graph initializers, where those
    payloads lie in `data`), or None when nothing is held or the walker cannot follow the
    buffer (then parse `data` itself)."""
    buf = memoryview(data).cast("B")
    try:
        graphs = [(s, vs, ve) for n, w, s, vs, ve in _fields(buf, 0, len(buf)) if n == _MODEL_GRAPH and w == 2]
        if len(graphs) != 1:
            return None  # no graph (protobuf's parse says what is wrong), or a graph merged from several fields
        graph_field, graph_start, graph_end = graphs[0]
        pieces: list[bytes | memoryview] = []
        held: list[HeldWeight] = []
        pos = graph_start
        index = 0
        for number, wire, field_start, value_start, value_end in _fields(buf, graph_start, graph_end):
            if number != _GRAPH_INITIALIZER or wire != 2:
                continue
            ranges, weight = _tensor(buf, value_start, value_end)
            if weight is not None:
                pieces.append(buf[pos:field_start])
                body = [buf[a:b] for a, b in ranges]
                size = sum(len(b) for b in body)
                pieces.append(b"\x2a")  # the key: field 5, wire type 2
                pieces.append(_encode_varint(size))
                pieces.extend(body)
                pos = value_end
                held.append(HeldWeight(index, weight.dtype, weight.dims, weight.offset, weight.length))
            index += 1
    except _Unfollowable:
        return None
    if not held:
        return None
    pieces.append(buf[pos:graph_end])
    graph_body = b"".join(pieces)
    key_end = _varint(buf, graph_field, graph_start)[1]  # the graph's key
    graph_key = bytes(buf[graph_field:key_end])
    stripped = b"".join((buf[:graph_field], graph_key, _encode_varint(len(graph_body)), graph_body, buf[graph_end:]))
    return stripped, held


def read_held(source: Any, weights: list[HeldWeight]) -> list[np.ndarray]:
    """Each held payload as a read-only array of its own (native byte order), read once: from
    the open file `source` (an int file descriptor) with os.preadv, or copied from the buffer."""
    arrays = []
    for weight in weights:
        dtype = np.dtype(weight.dtype)
        array = np.empty(weight.dims, dtype=dtype)
        target = memoryview(array.reshape(-1)).cast("B") if array.size else memoryview(bytearray())
        if isinstance(source, int):
            done = 0
            while done < weight.length:
                count = _pread_into(source, target[done:], weight.offset + done)
                if count <= 0:
                    raise OSError(f"the file ended {weight.length - done} bytes before an initializer's data")
                done += count
        else:
            target[:] = memoryview(source).cast("B")[weight.offset:weight.offset + weight.length]
        if sys.byteorder == "big" and dtype.itemsize > 1:
            array = array.byteswap().view(dtype.newbyteorder("="))
        array.setflags(write=False)
        arrays.append(array)
    return arrays


def _pread_into(fd: int, target: memoryview, offset: int) -> int:
    """Bytes read from `fd` at `offset` into `target` (os.preadv where the platform has it)."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [target], offset)
    os.lseek(fd, offset, os.SEEK_SET)
    with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
        return f.readinto(target) or 0
