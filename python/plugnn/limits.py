"""How large a tensor plugnn makes: the limit every size a model or its data declares is held to.

`max_tensor_bytes()`: the environment variable PLUGNN_MAX_TENSOR_BYTES (bytes, or with a suffix
K, M, G, T: 4G), by default half the machine's physical memory. The ONNX import refuses a tensor
it would read or fold above it (plugnn.onnx.validation), and a network whose memory plan needs
more is refused at load (LoadedNetwork), each with a typed error giving the size, before any
allocation: a model declaring a 400 GB tensor fails at once instead of raising a bare
MemoryError or growing until the process is killed.
"""

from __future__ import annotations

import os
import re

from plugnn.errors import ConfigurationError

MAX_TENSOR_BYTES_ENV = "PLUGNN_MAX_TENSOR_BYTES"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def max_tensor_bytes() -> int:
    """The largest tensor plugnn reads or computes at import (bytes)."""
    text = os.environ.get(MAX_TENSOR_BYTES_ENV, "").strip()
    if text:
        match = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
        if match is None:
            raise ConfigurationError(f"{MAX_TENSOR_BYTES_ENV}={text!r}: expected a number of bytes, e.g. 4G")
        return int(match.group(1)) * _UNITS[match.group(2).upper()]
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, OSError, ValueError):
        return 8 << 30


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
