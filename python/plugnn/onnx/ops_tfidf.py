"""TfIdfVectorizer (opset 9) on integer input, imported exactly as existing layers.

An n-gram of the pool (its items in pool_int64s, its size n in [min_gram_length,
max_gram_length]) is counted once per start position and skip distance d at which the input
row holds its items at positions start, start + d, ..., start + (n - 1) d: d = 1 only for
unigrams, d = 1 .. max_skip_count + 1 for longer n-grams (ONNX's reference and onnxruntime).
For each size n:
  GATHER of every window (constant indices [windows, n]) -> EQUAL with the pool's n-grams of
  that size -> REDUCE (min over the n items: all of them match) -> CAST to float -> REDUCE
  (sum over the windows) gives the counts [rows, n-grams].
The counts of all sizes are concatenated and multiplied (MATMUL) by a constant 0/1 matrix that
sends n-gram k to output column ngram_indexes[k] (counts of n-grams sharing a column add up);
then TF keeps the counts, IDF gives weights[i] (or 1) where a count is > 0, TFIDF multiplies
them by weights[i]. Every step is exact: integer counts in float32 well below 2^24.
A pool n-gram listed twice counts at its last listing only (ONNX's reference keeps the last).
String input (pool_strings) is refused: TfIdfVectorizer is imported as layers, which hold no strings
(string tensors are run-time values of the dynamic path: docs/onnx.md, "String tensors").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_sampling import since
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

_ATTRIBUTES = ("max_gram_length", "max_skip_count", "min_gram_length", "mode", "ngram_counts", "ngram_indexes",
               "pool_int64s", "pool_strings", "weights")


class _Pool:
    """The pool's n-grams: per size, the grams counted and the output column of each."""

    def __init__(self, ctx: NodeContext) -> None:
        if ctx.has("pool_strings"):
            raise ctx.error("attribute 'pool_strings': plugnn imports TfIdfVectorizer as layers, which hold no "
                            "strings (docs/onnx.md, 'String tensors'); pool_int64s with integer input is supported")
        pool = ctx.ints("pool_int64s")
        counts = ctx.ints("ngram_counts")
        indexes = ctx.ints("ngram_indexes")
        if pool is None or counts is None or indexes is None:
            raise ctx.error("attributes 'pool_int64s', 'ngram_counts' and 'ngram_indexes' are required")
        self.min_n = int(ctx.attr("min_gram_length", 0))
        self.max_n = int(ctx.attr("max_gram_length", 0))
        self.max_skip = int(ctx.attr("max_skip_count", 0))
        if not 1 <= self.min_n <= self.max_n or self.max_skip < 0:
            raise ctx.error(f"min_gram_length ({self.min_n}), max_gram_length ({self.max_n}) and max_skip_count "
                            f"({self.max_skip}) must satisfy 1 <= min <= max and skip >= 0")
        if any(b < a for a, b in zip(counts, counts[1:])) or (counts and (counts[0] != 0 or counts[-1] > len(pool))):
            raise ctx.unsupported_value("ngram_counts", counts, f"increasing start offsets from 0 into the "
                                        f"{len(pool)} pool items")
        grams: list[tuple[int, ...]] = []
        for size, start in enumerate(counts, start=1):
            end = counts[size] if size < len(counts) else len(pool)
            if (end - start) % size:
                raise ctx.error(f"ngram_counts: the {end - start} items of {size}-grams are not a multiple of {size}")
            grams += [tuple(pool[i:i + size]) for i in range(start, end, size)]
        if len(indexes) != len(grams):
            raise ctx.error(f"ngram_indexes has {len(indexes)} entries for the pool's {len(grams)} n-grams")
        if min(indexes, default=0) < 0:
            raise ctx.unsupported_value("ngram_indexes", indexes, "indexes >= 0")
        self.columns = max(indexes, default=-1) + 1
        # The last listing of an n-gram is the one counted.
        last = {gram: k for k, gram in enumerate(grams)}
        self.by_size: dict[int, list[tuple[tuple[int, ...], int]]] = {}
        for gram, k in sorted(last.items(), key=lambda item: item[1]):
            if self.min_n <= len(gram) <= self.max_n:
                self.by_size.setdefault(len(gram), []).append((gram, indexes[k]))

    def windows(self, size: int, length: int) -> np.ndarray:
        """[windows, size] input positions of every (skip distance, start) of n-grams of `size`."""
        distances = [1] if size == 1 else range(1, self.max_skip + 2)
        rows = [[start + j * d for j in range(size)] for d in distances for start in range(length - (size - 1) * d)]
        return np.array(rows, np.int64).reshape(-1, size)


def _counts(ctx: NodeContext, x: Tensor, pool: _Pool) -> tuple[list[Tensor], list[int]]:
    """Per n-gram size, the counts [rows, grams] and the output column of each gram."""
    net = ctx.network
    length = x.shape[-1]
    counts, columns = [], []
    for size, grams in sorted(pool.by_size.items()):
        positions = pool.windows(size, length)
        if not len(positions):
            continue
        windows = net.add_gather(x, ctx.array_tensor(positions, f"windows{size}"), axis=len(x.shape) - 1,
                                 name=ctx.aux(f"windows{size}"))
        shape = tuple(windows.shape)
        spread = net.add_reshape(windows, shape[:-1] + (1, size), name=ctx.aux(f"spread{size}"))
        table = ctx.array_tensor(np.array([g for g, _ in grams], np.int64), f"grams{size}")
        same = net.add_elementwise("equal", spread, table, name=ctx.aux(f"equal{size}"))
        match = net.add_reduce("min", same, [len(shape)], keep_dims=False, name=ctx.aux(f"match{size}"))
        ones = net.add_cast(match, DataType.FLOAT32, name=ctx.aux(f"hits{size}"))
        counts.append(net.add_reduce("sum", ones, [len(shape) - 2], keep_dims=False, name=ctx.aux(f"count{size}")))
        columns += [column for _, column in grams]
    return counts, columns


@op("TfIdfVectorizer", _ATTRIBUTES)
def tfidf_vectorizer(ctx: NodeContext) -> list[Any]:
    since(ctx, 9)
    mode = str(ctx.attr("mode", ""))
    if mode not in ("TF", "IDF", "TFIDF"):
        raise ctx.unsupported_value("mode", mode, "TF, IDF, TFIDF")
    pool = _Pool(ctx)
    weights = [float(w) for w in ctx.attr("weights", [])]
    if weights and len(weights) < pool.columns:
        raise ctx.error(f"attribute 'weights' has {len(weights)} values for {pool.columns} output columns")
    x = ctx.tensor(0, "X")
    if x.dtype not in (DataType.INT32, DataType.INT64):
        raise ctx.error(f"X is {x.dtype.numpy_name}; plugnn imports TfIdfVectorizer on int32 and int64 input "
                        f"(strings: docs/onnx.md)")
    if len(x.shape) not in (1, 2):
        raise ctx.error(f"X must be [C] or [N, C], got shape {list(x.shape)}")
    net = ctx.network
    out_shape = tuple(x.shape[:-1]) + (pool.columns,)
    if x.dtype is not DataType.INT64:
        x = net.add_cast(x, DataType.INT64, name=ctx.aux("int64"))
    counts, columns = _counts(ctx, x, pool)
    if not counts:
        return [ctx.array_tensor(np.zeros(out_shape, np.float32), "zeros")]
    joined = counts[0] if len(counts) == 1 else net.add_concat(counts, axis=-1, name=ctx.aux("counts"))
    spread = np.zeros((len(columns), pool.columns), np.float32)
    spread[np.arange(len(columns)), columns] = 1.0
    frequencies = net.add_matmul(joined, ctx.array_tensor(spread, "columns"),
                                 name=ctx.aux("frequencies") if mode != "TF" else ctx.name())
    if mode == "TF":
        return [frequencies]
    w = ctx.array_tensor(np.array(weights[:pool.columns], np.float32), "weights") if weights else None
    if mode == "TFIDF":
        if w is None:
            return [net.add_identity(frequencies, name=ctx.name())]
        return [net.add_elementwise("mul", frequencies, w, name=ctx.name())]
    seen = net.add_elementwise("greater", frequencies, ctx.array_tensor(np.zeros((), np.float32), "zero"),
                               name=ctx.aux("seen"))
    present = net.add_cast(seen, DataType.FLOAT32, name=ctx.aux("present") if w is not None else ctx.name())
    return [net.add_elementwise("mul", present, w, name=ctx.name())] if w is not None else [present]
