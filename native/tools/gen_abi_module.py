"""Generate plugnn's cffi type module from the public header.

Usage: gen_abi_module.py <backend_api.h> <output _abi_cffi.py>

The declarations cffi needs are the header's own: the block between the
PLUGNN_CDEF_BEGIN/END markers plus the three entry points, so the header stays
the single source of the ABI. The output is cffi's out-of-line ABI-mode module,
whose import costs no C parsing at run time.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import cffi

BEGIN = "/* PLUGNN_CDEF_BEGIN */"
END = "/* PLUGNN_CDEF_END */"
EXPORT = re.compile(r"^PLUGNN_BACKEND_EXPORT\s+(.+;)\s*$", re.MULTILINE)


def cdef_text(header: str) -> str:
    """Return the declarations of `header` that cffi reads."""
    start, end = header.find(BEGIN), header.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"gen_abi_module: markers {BEGIN} / {END} not found in the header")
    entry_points = EXPORT.findall(header)
    if len(entry_points) != 3:
        raise SystemExit(f"gen_abi_module: expected 3 exported entry points, found {entry_points}")
    return header[start + len(BEGIN) : end] + "\n" + "\n".join(entry_points) + "\n"


def main(argv: list[str]) -> int:
    header_path, output_path = Path(argv[1]), Path(argv[2])
    ffi = cffi.FFI()
    ffi.cdef(cdef_text(header_path.read_text(encoding="utf-8")))
    ffi.set_source("plugnn._abi_cffi", None)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    ffi.emit_python_code(str(output_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
