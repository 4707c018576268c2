"""Intermediate tensor memory: tensors whose lifetimes do not overlap share bytes."""

from __future__ import annotations

from dataclasses import dataclass

ALIGNMENT = 64


def _aligned(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True)
class Block:
    key: str
    size: int
    first: int  # index of the step that writes it
    last: int   # index of the last step that reads it


@dataclass(frozen=True)
class MemoryPlan:
    offsets: dict[str, int]
    peak_bytes: int
    naive_bytes: int


def plan(blocks: list[Block]) -> MemoryPlan:
    """Greedy by size: each block takes the lowest offset that does not overlap, in address,
    a placed block whose lifetime overlaps its own. Offsets are 64-byte aligned. Planned in C
    (the step runner's pnr_plan_memory) when that library is there, else here: the same plan."""
    ordered = sorted(blocks, key=lambda b: (-b.size, b.first, b.key))
    naive = sum(_aligned(max(b.size, 1)) for b in blocks)
    planned = _plan_in_c(ordered)
    if planned is not None:
        offsets, peak = planned
        return MemoryPlan(offsets, peak, naive)
    placed: list[tuple[int, int, Block]] = []  # (offset, aligned size, block)
    offsets: dict[str, int] = {}
    for block in ordered:
        size = _aligned(max(block.size, 1))
        live = sorted((o, s) for o, s, b in placed if b.first <= block.last and block.first <= b.last)
        offset = 0
        for o, s in live:
            if offset + size <= o:
                break
            offset = max(offset, o + s)
        placed.append((offset, size, block))
        offsets[block.key] = offset
    peak = max((o + s for o, s, _ in placed), default=0)
    return MemoryPlan(offsets, peak, naive)


def _plan_in_c(ordered: list[Block]) -> tuple[dict[str, int], int] | None:
    if len(ordered) < 2:
        return None
    from plugnn.runner_library import runner_library

    library = runner_library()
    planner = getattr(library, "pnr_plan_memory", None) if library is not None else None
    if planner is None:  # no runner library (logged once by step_runner), or one built before the planner
        return None
    from plugnn._abi import ffi

    n = len(ordered)
    sizes = ffi.new("uint64_t[]", [_aligned(max(b.size, 1)) for b in ordered])
    first = ffi.new("int64_t[]", [b.first for b in ordered])
    last = ffi.new("int64_t[]", [b.last for b in ordered])
    out = ffi.new("uint64_t[]", n)
    peak = int(planner(n, sizes, first, last, out))
    if peak == 0xFFFFFFFFFFFFFFFF:
        return None
    return {b.key: int(out[i]) for i, b in enumerate(ordered)}, peak
