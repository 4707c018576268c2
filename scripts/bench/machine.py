"""What the machine can do, measured in the benchmark's own run: memory bandwidth.

stream_add_gbs(T) times c = a + b (NumPy, float32) over arrays of 256 MiB each, far larger than
any cache, split into T contiguous parts run by T Python threads (NumPy releases the GIL inside
the ufunc loop), and reports the best of `repeats` runs as GB/s of bytes read + written (3 x 256
MiB per run), the way STREAM's "add" counts them. It is the bandwidth the memory-bound rows are
compared with when --peak-gbs is not given.
"""

from __future__ import annotations

import threading
import time

import numpy as np


def stream_add_gbs(threads: int, mib: int = 256, repeats: int = 5) -> float:
    n = mib * 1024 * 1024 // 4
    a = np.ones(n, np.float32)
    b = np.ones(n, np.float32)
    c = np.empty(n, np.float32)
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def part(lo: int, hi: int) -> None:
        np.add(a[lo:hi], b[lo:hi], out=c[lo:hi])

    best = float("inf")
    for _ in range(repeats):
        workers = [threading.Thread(target=part, args=bound) for bound in bounds]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - start)
    return 3 * n * 4 / best / 1e9
