"""CpuAcc's lone blocked convolutions with fewer jobs than threads (plugins/accel/src/ops/conv_nchwc.c,
row_segments): a job is an output row of a pair of output blocks, so a 1-D convolution (one
output row: M5's 1 -> 32 on 16000 samples) had one job and ran on one thread; its rows are now
cut into column segments of whole 14-pixel tiles, one per thread, and unpacked after all are done.
Against a float64 NumPy oracle on every kernel set and thread count, the same bits at every
thread count of one kernel set: one-channel and blocked inputs, strides 1 and 16, an odd block
count, and padding with dilation (the tiles that leave out the padding's columns, moved with
the segment)."""

from __future__ import annotations

import pytest

import plugnn

from .common import HAVE_CPUACC, check_conv_case

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RTOL, ATOL = 1e-4, 1e-5

# n, c, h, w, o, kernel, stride, padding (top, left, bottom, right), dilation
SHAPES = {
    "1 -> 32, kernel 80, stride 16 on 16000 (M5's first layer: one job)": (1, 1, 1, 16000, 32, (1, 80), (1, 16),
                                                                          (0, 0, 0, 0), (1, 1)),
    "32 -> 32, kernel 3 on 995": (1, 32, 1, 995, 32, (1, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
    "3 -> 48 (a pair and a single block), 3x3 padded on 1 x 300": (1, 3, 1, 300, 48, (3, 3), (1, 1), (1, 1, 1, 1),
                                                                   (1, 1)),
    "256 -> 16, kernel 3 dilated 24, padding 24 on 60 (rows split by tap columns)": (1, 256, 1, 60, 16, (1, 3),
                                                                                    (1, 1), (0, 24, 0, 24),
                                                                                    (1, 24)),
}


@pytest.mark.parametrize("name", SHAPES)
def test_one_row_conv_on_every_kernel_set_and_thread_count(runtimes: dict[tuple[str, int], plugnn.Runtime],
                                                           name: str) -> None:
    check_conv_case(runtimes, name, SHAPES[name], seed=23, rtol=RTOL, atol=ATOL)
