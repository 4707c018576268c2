"""libplugnn_runner's pnr_apply_dims (plugnn.steady_resize): every rule is checked before any
target is written; a rule that reads outside the values, a negative value, an empty tensor, a
byte count past its limit or past 64 bits, a rank above 8 or a target naming no rule writes
nothing and names the first rule at fault."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugnn._abi import ffi
from plugnn.runner_library import runner_library


def library():
    lib = runner_library()
    if lib is None:
        pytest.fail("libplugnn_runner did not load (it is built with the package)")
    return lib


def rules(*specs: tuple[Sequence[int], int, int]):
    array = ffi.new("pnr_dims_rule[]", len(specs))
    for entry, (dims, itemsize, max_bytes) in zip(array, specs):
        entry.rank = len(dims)
        entry.itemsize = itemsize
        entry.max_bytes = max_bytes
        for k, d in enumerate(dims):
            entry.dims[k] = d
    return array


def infos(n: int):
    array = ffi.new("pn_tensor_info[]", n)
    for info in array:
        info.rank = 2
        info.dims[0], info.dims[1] = 7, 7
    pointers = ffi.new("pn_tensor_info*[]", [ffi.addressof(array, i) for i in range(n)])
    return array, pointers


def apply(values: Sequence[int], table, count: int, targets, target_rule: Sequence[int]) -> int:
    vals = ffi.new("int64_t[]", list(values) or [0])
    which = ffi.new("int64_t[]", list(target_rule) or [0])
    return int(library().pnr_apply_dims(vals, len(values), table, count, targets, which, len(target_rule)))


def test_dims_come_from_the_values_and_the_constants() -> None:
    table = rules(((1, -1, 64), 4, 0), ((-2, -1), 2, 4 * 9 * 2), ((), 8, 8))
    array, pointers = infos(4)
    assert apply([9, 4], table, 3, pointers, [0, 1, 1, 2]) == -1
    got = [(array[i].rank, list(array[i].dims)) for i in range(4)]
    assert got == [(3, [1, 9, 64, 0, 0, 0, 0, 0]), (2, [4, 9, 0, 0, 0, 0, 0, 0]), (2, [4, 9, 0, 0, 0, 0, 0, 0]),
                   (0, [0] * 8)]


@pytest.mark.parametrize("case, rule, values, failed", [
    ("a value index past the values", (((1, -3), 4, 0),), [5, 6], 0),
    ("a negative value", (((2, 2), 4, 0), ((-1, 3), 4, 0)), [-4], 1),
    ("an empty tensor", (((-1, 3), 4, 0),), [0], 0),
    ("more bytes than its place holds", (((2, 2), 4, 0), ((-1, 4), 4, 63)), [4], 1),
    ("a byte count past 64 bits", (((1 << 40, 1 << 40), 4, 0),), [], 0),
    ("a rank above 8", (((1,) * 9, 4, 0),), [], 0),
    ("no element size", (((3,), 0, 0),), [], 0),
])
def test_a_rule_that_does_not_hold_is_named_and_nothing_is_written(case: str, rule: tuple, values: list[int],
                                                                    failed: int) -> None:
    specs = list(rule)
    if len(specs[0][0]) > 8:  # the struct holds 8 dims: the rank is what is wrong
        table = rules(((1,) * 8, 4, 0))
        table[0].rank = 9
    else:
        table = rules(*specs)
    array, pointers = infos(len(specs))
    assert apply(values, table, len(specs), pointers, list(range(len(specs)))) == failed, case
    assert all(array[i].rank == 2 and array[i].dims[0] == 7 and array[i].dims[1] == 7 for i in range(len(specs)))


def test_a_target_naming_no_rule_writes_nothing() -> None:
    table = rules(((3, 4), 4, 0))
    array, pointers = infos(2)
    assert apply([], table, 1, pointers, [0, 1]) == 1
    assert apply([], table, 1, pointers, [0, -1]) == 1
    assert [array[i].dims[0] for i in range(2)] == [7, 7]
