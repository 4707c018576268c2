"""Einsum (opsets 12 and 28) as existing layers: no layer kind of its own, because every einsum
is exactly a sequence of
  - diagonals (a label repeated within one operand): the two axes moved last, flattened, and
    GATHER picks every (n + 1)-th element;
  - sums over labels no other operand and not the output has: REDUCE (sum);
  - contractions of two operands: TRANSPOSE to [batch..., kept..., contracted...] and
    [batch..., contracted..., kept...], RESHAPE to [batch..., M, K] and [batch..., K, N], MATMUL
    (which broadcasts the batch dims as the ellipsis does), RESHAPE back;
  - a final TRANSPOSE to the output's order.
Operands are contracted left to right. The ellipsis stands for the same dims in every operand,
aligned at their last dims and broadcast (NumPy's rules); a label of size 1 in one operand
broadcasts against another's size. Implicit output (no "->"): the ellipsis dims first, then the
labels that occur once, in ASCII order. With "->", an output without "..." is an error when the
operands have ellipsis dims (as NumPy's einsum). Every tensor of one numeric type.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from plugnn.onnx.context import NodeContext
from plugnn.onnx.ops_sampling import since
from plugnn.onnx.registry import op


@dataclass
class _Operand:
    value: Any            # a network Tensor
    labels: list[str]     # one per dim: a letter, or ".i" for ellipsis dim i


def _expand(ctx: NodeContext, term: str, rank: int | None, ellipsis_dims: int, where: str) -> list[str]:
    """The labels of one term; `rank` None for the output (its ellipsis takes every dim)."""
    if term.count("...") > 1 or term.replace("...", "").count(".") > 0:
        raise ctx.unsupported_value("equation", ctx.attr("equation"), f"{where}: at most one '...' per term")
    head, dots, tail = term.partition("...")
    letters = head + tail
    bad = [c for c in letters if not (c.isascii() and c.isalpha())]
    if bad:
        raise ctx.unsupported_value("equation", ctx.attr("equation"), f"{where}: letters a-z, A-Z and '...' "
                                    f"(got {bad[0]!r})")
    if rank is None:
        count = ellipsis_dims if dots else 0
    else:
        count = rank - len(letters)
        if count < 0 or (count > 0 and not dots):
            raise ctx.error(f"equation {ctx.attr('equation')!r}: {where} names {len(letters)} dims, the operand has "
                            f"rank {rank}")
    first = ellipsis_dims - count
    return list(head) + [f".{first + i}" for i in range(count)] + list(tail)


def _parse(ctx: NodeContext, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    equation = ctx.attr("equation")
    if equation is None:
        raise ctx.error("attribute 'equation' is required")
    text = str(equation).replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"equation {equation!r} has {len(terms)} operand term(s), the node {len(ranks)} input(s)")
    ellipsis_dims = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    labels = [_expand(ctx, t, r, ellipsis_dims, f"term {i}") for i, (t, r) in enumerate(zip(terms, ranks))]
    counts = Counter(label for term in labels for label in term)
    dots = [f".{i}" for i in range(ellipsis_dims)]
    if not arrow:
        return labels, dots + sorted(c for c, n in counts.items() if n == 1 and not c.startswith("."))
    output = _expand(ctx, rhs, None, ellipsis_dims, "the output")
    if ellipsis_dims and "..." not in rhs:
        raise ctx.error(f"equation {equation!r}: the operands have ellipsis dims but the output has no '...'")
    if len(set(output)) != len(output):
        raise ctx.error(f"equation {equation!r}: the output repeats a label")
    missing = [c for c in output if c not in counts]
    if missing:
        raise ctx.error(f"equation {equation!r}: output label {missing[0]!r} is in no operand")
    return labels, output


class _Builder:
    """Layers of one Einsum node, with the label sizes (the broadcast size of each label)."""

    def __init__(self, ctx: NodeContext, operands: list[_Operand]) -> None:
        self.ctx = ctx
        self.net = ctx.network
        self.sizes: dict[str, int] = {}
        for operand in operands:
            for label, size in zip(operand.labels, operand.value.shape):
                known = self.sizes.get(label, 1)
                if size != 1 and known not in (1, size):
                    raise ctx.error(f"equation {ctx.attr('equation')!r}: label {label.replace('.', '...#')!r} has "
                                    f"sizes {known} and {size}, which do not broadcast")
                self.sizes[label] = size if size != 1 else known

    def _name(self, what: str) -> str:
        return self.ctx.aux(what)

    def transpose(self, x: _Operand, labels: list[str]) -> _Operand:
        if labels == x.labels:
            return x
        perm = [x.labels.index(label) for label in labels]
        return _Operand(self.net.add_transpose(x.value, perm, name=self._name("transpose")), labels)

    def reshape(self, value: Any, shape: tuple[int, ...]) -> Any:
        if tuple(value.shape) == tuple(shape):
            return value
        return self.net.add_reshape(value, shape, name=self._name("reshape"))

    def diagonals(self, x: _Operand) -> _Operand:
        """Every repeated label reduced to its diagonal."""
        while True:
            repeated = next((label for label, n in Counter(x.labels).items() if n > 1), None)
            if repeated is None:
                return x
            first = x.labels.index(repeated)
            second = x.labels.index(repeated, first + 1)
            n, m = x.value.shape[first], x.value.shape[second]
            if n != m:
                raise self.ctx.error(f"equation {self.ctx.attr('equation')!r}: the diagonal of label {repeated!r} "
                                     f"takes dims of one size, got {n} and {m}")
            rest = [i for i in range(len(x.labels)) if i not in (first, second)]
            order = [x.labels[i] for i in rest]
            moved = self.transpose(_Operand(x.value, [f"{label}#{i}" for i, label in enumerate(x.labels)]),
                                   [f"{x.labels[i]}#{i}" for i in rest + [first, second]])
            shape = tuple(x.value.shape[i] for i in rest)
            flat = self.reshape(moved.value, shape + (n * n,))
            indices = self.ctx.array_tensor(np.arange(n, dtype=np.int64) * (n + 1), "diagonal")
            value = self.net.add_gather(flat, indices, axis=len(shape), name=self._name("diagonal"))
            x = _Operand(value, order + [repeated])

    def sum_out(self, x: _Operand, keep: set[str]) -> _Operand:
        """x with every label outside `keep` summed away."""
        axes = [i for i, label in enumerate(x.labels) if label not in keep]
        if not axes:
            return x
        value = self.net.add_reduce("sum", x.value, axes, keep_dims=False, name=self._name("sum"))
        return _Operand(value, [label for label in x.labels if label in keep])

    def collapse(self, x: _Operand, labels: list[str]) -> _Operand:
        """Labels of size 1 in x and larger elsewhere summed to size 1 in the other operand's
        place: x's `labels` whose size here exceeds 1 while the partner has 1 (see contract)."""
        axes = [x.labels.index(label) for label in labels]
        if not axes:
            return x
        value = self.net.add_reduce("sum", x.value, axes, keep_dims=True, name=self._name("sum"))
        return _Operand(value, x.labels)

    def contract(self, a: _Operand, b: _Operand, later: set[str]) -> _Operand:
        a = self.sum_out(a, set(b.labels) | later)
        b = self.sum_out(b, set(a.labels) | later)
        shared = [label for label in a.labels if label in b.labels]
        batch = [label for label in shared if label in later]
        contracted = [label for label in shared if label not in later]
        size_a = dict(zip(a.labels, a.value.shape))
        size_b = dict(zip(b.labels, b.value.shape))
        a = self.collapse(a, [c for c in contracted if size_a[c] != size_b[c] and size_b[c] == 1])
        b = self.collapse(b, [c for c in contracted if size_a[c] != size_b[c] and size_a[c] == 1])
        size_a = dict(zip(a.labels, a.value.shape))
        size_b = dict(zip(b.labels, b.value.shape))
        a_only = [label for label in a.labels if label not in b.labels]
        b_only = [label for label in b.labels if label not in a.labels]
        k = int(np.prod([size_a[c] for c in contracted], dtype=np.int64))
        m = int(np.prod([size_a[c] for c in a_only], dtype=np.int64))
        n = int(np.prod([size_b[c] for c in b_only], dtype=np.int64))
        left = self.transpose(a, batch + a_only + contracted)
        right = self.transpose(b, batch + contracted + b_only)
        lhs = self.reshape(left.value, tuple(size_a[c] for c in batch) + (m, k))
        rhs = self.reshape(right.value, tuple(size_b[c] for c in batch) + (k, n))
        product = self.net.add_matmul(lhs, rhs, name=self._name("matmul"))
        batch_sizes = tuple(max(size_a[c], size_b[c]) if min(size_a[c], size_b[c]) != 0 else 0 for c in batch)
        shape = batch_sizes + tuple(size_a[c] for c in a_only) + tuple(size_b[c] for c in b_only)
        return _Operand(self.reshape(product, shape), batch + a_only + b_only)


def _einsum_inputs(ctx: NodeContext) -> list[int]:
    if ctx.num_inputs < 1:
        raise ctx.error("Einsum takes at least one input")
    return [len(ctx.shape(i)) for i in range(ctx.num_inputs)]


def _fold(ctx: NodeContext) -> list[Any] | None:
    arrays = [np.asarray(ctx.value(i)) for i in range(ctx.num_inputs)]
    if any(a.dtype.kind not in "iuf" for a in arrays):
        return None  # bfloat16 and the like: the layers compute them
    _parse(ctx, [a.ndim for a in arrays])
    return [np.asarray(np.einsum(str(ctx.attr("equation")).replace(" ", ""), *arrays))]


@op("Einsum", ("equation",), fold=_fold)
def einsum(ctx: NodeContext) -> list[Any]:
    since(ctx, 12)
    labels, output = _parse(ctx, _einsum_inputs(ctx))
    values = [ctx.tensor(i, f"Inputs[{i}]") for i in range(ctx.num_inputs)]
    dtypes = {v.dtype for v in values}
    if len(dtypes) > 1:
        raise ctx.error(f"the inputs have element types {sorted(t.numpy_name for t in dtypes)}; Einsum takes one type")
    if values[0].dtype.name == "BOOL":
        raise ctx.error("Einsum takes numeric tensors, got bool")
    operands = [_Operand(v, list(term)) for v, term in zip(values, labels)]
    builder = _Builder(ctx, operands)
    operands = [builder.diagonals(x) for x in operands]
    wanted = set(output)
    for i, x in enumerate(operands):
        elsewhere = {label for j, other in enumerate(operands) if j != i for label in other.labels}
        operands[i] = builder.sum_out(x, wanted | elsewhere)
    result = operands[0]
    for i in range(1, len(operands)):
        later = wanted | {label for other in operands[i + 1:] for label in other.labels}
        result = builder.contract(result, operands[i], later)
    result = builder.sum_out(result, wanted)
    result = builder.transpose(result, output)
    final = tuple(builder.sizes.get(c, 1) for c in output)
    if tuple(result.value.shape) != final:  # an output label of size 1 here, larger in the equation
        result = _Operand(ctx.network.add_expand(result.value, final, name=ctx.aux("broadcast")), output)
    if result.value is values[0]:
        return [ctx.network.add_identity(result.value, name=ctx.name())]
    return [result.value]
