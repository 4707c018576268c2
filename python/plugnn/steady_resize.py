"""A steady re-size: a symbolic network's instance taken to another binding by writing new dims
into the tensors its workloads are bound to, in one C call, when the re-size needs nothing else.

A decode step (one more token in the KV cache) or a request of another length changes the same
values of the shape program every time (`ShapeProgram.changed_slots`), and with them the same
layers and tensors. When a re-size that changed those values (`LoadedNetwork.resize`) kept every
changed layer's workload (each takes its tensors' shapes at execute, ABI 1.3), kept the arena and
its movement views, and moved no step, the next re-size that changes the same values does the same
again with other numbers: `SteadyResize` records it, and `apply` re-does it: every changed tensor's
dims are computed from the new values and written into every pn_tensor_info bound to it
(`pnr_apply_dims`, native/runner/plugnn_runner.h), after checking that each tensor still fits the
bytes planned for it (its block in the arena, less its offset in the block it is a view of) and is
not empty. What else depends on the shapes is redone in Python for the few tensors it concerns:
the shapes a run checks its inputs and outputs against, the buffer an input is copied into for a
backend plugnn does not ship, and the grouping of axes of the Reshapes a fused layer absorbed
(backend_api.h, PN_WORKLOAD_SHAPES_AT_EXECUTE). When a check fails, nothing
has been written and the caller re-sizes the full way.

What it costs: one C call over the changed tensors (tens to hundreds of bound tensors: a few
microseconds) and a few tuples, instead of a new concrete graph, new NumPy views and a rebinding
per tensor in Python (0.4-0.8 ms a step on the test decoders). The concrete graph at the new
shapes is made only when something reads it (LoadedNetwork._materialize).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from plugnn._abi import ffi
from plugnn.reshape_groups import grouping, regrouped_by

Rule = tuple[int, ...]  # per dim: the size (>= 0) or -1 - i for values[i] (ShapeProgram.dims_rule)


def shape_at(rule: Rule, values: Sequence[int]) -> tuple[int, ...]:
    """The dims `rule` gives at `values`."""
    return tuple([values[-1 - d] if d < 0 else d for d in rule])


class SteadyResize:
    """The recorded re-size of one set of changed values (see the module's text).

    `rules`: per changed tensor key, its rule, its element size and the bytes it may take (0:
    outside the arena); `targets`: per bound pn_tensor_info (a cffi pointer) the key it holds;
    `plan_entries`: per key an input or output of the network, its ("input" | "output", index)
    in the run's binding plan; `regroups`: the rules of the input and the result of each Reshape
    a fused layer absorbed, whose grouping of axes must hold at the new shapes; the layer lists
    are what the recording re-size reported (LoadedNetwork.kept_layers and the others);
    `values`: the evaluated values the network is at;
    `staged`: per changed input copied into a buffer of the network's own (one a backend plugnn
    does not ship reads), the bound tensors (bound sequence, index) that read that buffer."""

    def __init__(self, library: Any, values: Sequence[int], rules: Sequence[tuple[str, Rule, int, int]],
                 targets: Sequence[tuple[Any, str]], plan_entries: Sequence[tuple[str, str, int]],
                 regroups: Sequence[tuple[Rule, Rule]], kept_layers: list[str], rebound_layers: list[str],
                 staged: dict[str, list[tuple[Any, int]]] | None = None) -> None:
        self._apply = library.pnr_apply_dims
        index = {key: i for i, (key, _, _, _) in enumerate(rules)}
        self.keys = frozenset(index)
        used = sorted({-1 - d for _, rule, _, _ in rules for d in rule if d < 0})
        remap = {slot: j for j, slot in enumerate(used)}  # the values the rules read, packed
        self._take = operator.itemgetter(*used) if len(used) > 1 else (lambda v: (v[used[0]],)) if used \
            else (lambda v: ())
        self._values = ffi.new("int64_t[]", max(len(used), 1))
        self._num_values = len(used)
        self._rules = ffi.new("pnr_dims_rule[]", max(len(rules), 1))
        for entry, (_, rule, itemsize, max_bytes) in zip(self._rules, rules):
            entry.rank = len(rule)
            entry.itemsize = itemsize
            entry.max_bytes = max_bytes
            for k, d in enumerate(rule):
                entry.dims[k] = d if d >= 0 else -1 - remap[-1 - d]
        self._num_rules = len(rules)
        self._targets = ffi.new("pn_tensor_info*[]", max(len(targets), 1))
        self._target_rule = ffi.new("int64_t[]", max(len(targets), 1))
        for t, (pointer, key) in enumerate(targets):
            self._targets[t] = pointer
            self._target_rule[t] = index[key]
        self._num_targets = len(targets)
        self._rule_of = {key: rule for key, rule, _, _ in rules}
        self.plan_entries = list(plan_entries)
        # per fused Reshape: its rules and how it groups axes at `values` (the shapes the
        # network is at when this is recorded, which its workloads follow: resize checked it)
        self._regroups = []
        for source, result in regroups:
            old_in, old_out = shape_at(source, values), shape_at(result, values)
            self._regroups.append((source, result, old_in, old_out, grouping(old_in, old_out)))
        self._held: dict[tuple[int, ...], bool] = {}  # holds' answers, by the values the rules read
        slots = sorted({-1 - d for source, result in regroups for d in (*source, *result) if d < 0})
        self._regroup_values = operator.itemgetter(*slots) if len(slots) > 1 \
            else (lambda v: (v[slots[0]],)) if slots else (lambda v: ())
        self.kept_layers = kept_layers
        self.rebound_layers = rebound_layers
        self.staged = dict(staged or {})

    def holds(self, values: Sequence[int]) -> bool:
        """Whether the Reshapes fused layers absorbed group axes at `values` as at the shapes
        this was recorded at."""
        if not self._regroups:
            return True
        key = self._regroup_values(values)
        held = self._held.get(key)
        if held is None:
            held = True
            for source, result, old_in, old_out, groups in self._regroups:
                new_in, new_out = shape_at(source, values), shape_at(result, values)
                if (new_in != old_in or new_out != old_out) and (
                        groups is None or regrouped_by(groups, old_in, old_out, new_in) != new_out):
                    held = False
                    break
            if len(self._held) < 4096:
                self._held[key] = held
        return held

    def write(self, values: Sequence[int]) -> bool:
        """Write every changed tensor's dims at `values` into the tensors bound to it; False (and
        nothing written) when one of them no longer fits or would be empty."""
        if self._num_values:
            self._values[0:self._num_values] = self._take(values)
        failed = self._apply(self._values, self._num_values, self._rules, self._num_rules, self._targets,
                             self._target_rule, self._num_targets)
        return failed < 0

    def staged_shapes(self, values: Sequence[int]) -> list[tuple[str, tuple[int, ...], list[tuple[Any, int]]]]:
        """Per staged input among the changed tensors: (key, its shape at `values`, its readers)."""
        return [(key, shape_at(self._rule_of[key], values), readers) for key, readers in self.staged.items()]

    def shapes(self, values: Sequence[int]) -> list[tuple[str, str, int, tuple[int, ...]]]:
        """Per input or output of the network among the changed tensors: (key, side, index in
        the binding plan, its shape at `values`)."""
        rule = self._rule_of
        return [(key, side, index, shape_at(rule[key], values)) for key, side, index in self.plan_entries]


Materialize = Callable[[], tuple[Any, Any]]  # () -> (the OptimizedNetwork at the new shapes, its remake)

__all__ = ["Materialize", "SteadyResize", "shape_at"]
