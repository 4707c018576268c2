"""The cffi view of backend_api.h, and the helpers that turn C statuses into exceptions.

The type module `_abi_cffi` is generated from the header when plugnn is built, so
importing it parses no C. Everything that touches C structs goes through here.
"""

from __future__ import annotations

import functools
from typing import Any

from plugnn._abi_cffi import ffi
from plugnn._abi_defs import Status
from plugnn.errors import BackendError, BackendOptionError

MESSAGE_CAPACITY = 1024
NULL = ffi.NULL


class Message:
    """A reusable caller-owned pn_string_out with its buffer."""

    __slots__ = ("buffer", "out")

    def __init__(self, capacity: int = MESSAGE_CAPACITY) -> None:
        self.buffer = ffi.new("char[]", capacity)
        self.out = ffi.new("pn_string_out*", {"data": self.buffer, "capacity": capacity})

    def clear(self) -> None:
        self.buffer[0] = b"\0"

    def text(self) -> str:
        return ffi.string(self.buffer).decode("utf-8", errors="replace")


def status_name(status: int) -> str:
    """The C name of a pn_status value ("PN_ERR_INTERNAL"), or a number for unknown ones."""
    try:
        return f"PN_{Status(status).name}"
    except ValueError:
        return f"status {status}"


def check(status: int, message: Message, backend_id: str, call: str) -> None:
    """Raise the typed error for a failing status; return quietly on PN_OK."""
    if status == Status.OK:
        return
    text = message.text() or "(no message)"
    error_type = BackendOptionError if call.startswith(("set_option", "get_option")) else BackendError
    raise error_type(backend_id, call, text, status_name(status))


@functools.cache
def field_end(ctype: str, field: str) -> int:
    """Offset just past `field` in the struct `ctype` as this header defines it."""
    for name, info in ffi.typeof(ctype).fields:
        if name == field:
            return int(info.offset + ffi.sizeof(info.type))
    raise KeyError(f"{ctype} has no field {field!r}")


def covers(struct_ptr: Any, ctype: str, field: str) -> bool:
    """True when the writer's struct_size reaches past `field` (PN_HAS_FIELD in Python)."""
    if struct_ptr == NULL:
        return False
    return int(struct_ptr.struct_size) >= field_end(ctype, field)


def function(struct_ptr: Any, ctype: str, field: str) -> Any:
    """The function pointer `field`, or None when it is NULL or past the struct_size."""
    if not covers(struct_ptr, ctype, field):
        return None
    fn = getattr(struct_ptr, field)
    return None if fn == NULL else fn
