"""How a Reshape groups axes: the rule by which a fused layer that reads a tensor through a
Reshape works the Reshape's output dims out again at other input dims (a KV cache one token
longer), and by which the runtime checks, before it passes such a layer other dims, that each
Reshape it absorbed still follows it.

The rule is plugin_common's (`pn_reshape_groups_make` / `_apply` in
native/include/plugnn/plugin_common.h, where it is spelled out): walking both shapes from the
first axis, an input and an output axis of size 1 pair up; any other output axis of size 1 stays
1; otherwise the fewest input and output axes with equal products form a group, whose one output
axis is the product of its input axes (an axis kept, or adjacent axes merged), or whose several
output axes keep their sizes and need the group's input sizes kept (a split); input axes of size 1
left after the last output axis join the last group.
"""
from __future__ import annotations

from collections.abc import Sequence

from plugnn.tensor import MAX_DIMS

__all__ = ["follows_grouping", "grouping", "regrouped", "regrouped_by"]

# per output axis: (first input axis, number of input axes, kept)
_Groups = list[tuple[int, int, bool]]


def _groups(old_in: Sequence[int], old_out: Sequence[int]) -> _Groups | None:
    """The grouping of a Reshape of `old_in` into `old_out`, or None when they form none."""
    if len(old_in) > MAX_DIMS or len(old_out) > MAX_DIMS or any(d < 1 for d in (*old_in, *old_out)):
        return None
    groups: _Groups = []
    i = j = 0
    n_in, n_out = len(old_in), len(old_out)
    last = -1
    while i < n_in or j < n_out:
        if i < n_in and j < n_out and old_in[i] == 1 and old_out[j] == 1:
            groups.append((i, 1, False))
            last = j
            i += 1
            j += 1
            continue
        if j < n_out and old_out[j] == 1:
            groups.append((i, 0, True))
            j += 1
            continue
        if j == n_out:  # input axes of size 1 after the last output axis join the last group
            if old_in[i] != 1 or last < 0:
                return None
            for k in range(last, n_out):
                first, count, kept = groups[k]
                if count > 0 and first + count == i:
                    groups[k] = (first, count + 1, kept)
            i += 1
            continue
        if i == n_in:
            return None
        i0, j0 = i, j
        p_in, p_out = old_in[i], old_out[j]
        while p_in != p_out:
            if p_in < p_out:
                i += 1
                if i == n_in:
                    return None
                p_in *= old_in[i]
            else:
                j += 1
                if j == n_out:
                    return None
                p_out *= old_out[j]
        groups.extend((i0, i - i0 + 1, j > j0) for _ in range(j0, j + 1))
        last = j0
        i += 1
        j += 1
    return groups


def regrouped(old_in: Sequence[int], old_out: Sequence[int], new_in: Sequence[int]) -> tuple[int, ...] | None:
    """The output dims of the Reshape of `old_in` into `old_out` at input dims `new_in` by the
    rule, or None where they do not follow from it (another rank, a split group's input sizes
    changed, no grouping)."""
    if len(new_in) != len(old_in):
        return None
    groups = _groups(old_in, old_out)
    if groups is None:
        return None
    return regrouped_by(groups, old_in, old_out, new_in)


def grouping(old_in: Sequence[int], old_out: Sequence[int]) -> _Groups | None:
    """The grouping of a Reshape of `old_in` into `old_out` (for regrouped_by), or None."""
    return _groups(old_in, old_out)


def regrouped_by(groups: _Groups, old_in: Sequence[int], old_out: Sequence[int],
                 new_in: Sequence[int]) -> tuple[int, ...] | None:
    """`regrouped` with the grouping of `old_in` into `old_out` made once (`grouping`)."""
    if len(new_in) != len(old_in):
        return None
    out: list[int] = []
    for (first, count, kept), size in zip(groups, old_out):
        axes = range(first, first + count)
        if kept:
            if any(new_in[a] != old_in[a] for a in axes):
                return None
            out.append(size)
            continue
        product = 1
        for a in axes:
            if new_in[a] < 1:
                return None
            product *= new_in[a]
        out.append(product)
    return tuple(out)


def follows_grouping(old_in: Sequence[int], old_out: Sequence[int], new_in: Sequence[int],
                     new_out: Sequence[int]) -> bool:
    """Whether a Reshape of `old_in` into `old_out` reshapes `new_in` into `new_out` by the same
    grouping of axes (the rule above)."""
    return regrouped(old_in, old_out, new_in) == tuple(new_out)
