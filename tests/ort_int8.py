"""What onnxruntime's integer kernels compute exactly on this CPU, for the tests that take
onnxruntime as the oracle of quantized models.

Without VNNI (AVX-512 VNNI, AVX-VNNI or AMX), onnxruntime's uint8 x int8 GEMM sums pairs of
products into int16 with saturation (vpmaddubsw), so full-range int8 weights overflow and it no
longer computes the operator; its quantizer's `reduce_range=True` (7-bit weights) is its own
advice for such CPUs. `REDUCE_RANGE` is that setting here.
"""

from __future__ import annotations

from pathlib import Path

VNNI_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}


def has_vnni() -> bool:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return bool(VNNI_FLAGS & set(line.split(":", 1)[1].split()))
    return False


REDUCE_RANGE = not has_vnni()
