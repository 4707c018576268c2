"""How a Reshape groups axes (plugnn.reshape_groups, plugin_common's pn_reshape_groups): the rule
by which a fused layer that reads a tensor through a Reshape works its dims out at other shapes,
and by which the runtime checks each absorbed Reshape before it passes a fused layer other dims.
The runtime's Python and plugin_common's C must give the same dims for the same shapes: checked
on hand-made cases and on 3000 seeded random ones, the C side compiled here against the installed
package's libplugnn_plugin_common.a."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from plugnn.cli import PACKAGE_DIR
from plugnn.reshape_groups import follows_grouping, regrouped

CASES = [
    # (old in, old out, new in, new out or None)
    ((1, 10, 768), (1, 10, 12, 64), (1, 11, 768), (1, 11, 12, 64)),        # heads split: the length follows
    ((1, 10, 768), (1, 10, 12, 64), (4, 11, 768), (4, 11, 12, 64)),        # and the batch (1 pairs with 1)
    ((1, 10, 768), (1, 10, 12, 64), (1, 10, 384), None),                    # a split axis changed
    ((2, 2, 2, 33, 16), (2, 4, 33, 16), (2, 2, 2, 34, 16), (2, 4, 34, 16)),  # grouped-query merge
    ((2, 2, 2, 33, 16), (2, 4, 33, 16), (2, 2, 3, 33, 16), (2, 6, 33, 16)),  # merged axes multiply
    ((1, 12, 768), (1, 12, 12, 64), (1, 13, 768), (1, 13, 12, 64)),          # 12 queries, 12 heads
    ((4,), (1, 4, 1), (5,), (1, 5, 1)),                                     # axes of 1 of no input axis
    ((4, 1), (4,), (5, 1), (5,)),                                           # trailing input 1s join
    ((6,), (2, 3), (6,), (2, 3)),
    ((6,), (2, 3), (7,), None),
    ((3, 4), (2, 6), (3, 4), (2, 6)),                                       # a mixed group keeps its sizes
    ((3, 4), (2, 6), (3, 5), None),
    ((1, 6), (6,), (3, 6), (18,)),                                          # a leading 1 merges
    ((2, 3), (2, 3), (2, 3, 1), None),                                      # another rank
    ((0, 3), (3, 0), (1, 3), None),                                         # zero sizes form no grouping
    ((2,) * 4, (1, 2) * 4 + (1,), (2,) * 4, None),                          # a rank above PN_MAX_DIMS
]


@pytest.mark.parametrize("old_in, old_out, new_in, want", CASES)
def test_the_rule_on_hand_made_reshapes(old_in, old_out, new_in, want) -> None:
    assert regrouped(old_in, old_out, new_in) == want
    if want is not None:
        assert follows_grouping(old_in, old_out, new_in, want)
        assert not follows_grouping(old_in, old_out, new_in, want[::-1] + (1,))


def random_case(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A Reshape made of random merges and splits of random dims, and other input dims."""
    sizes = [int(rng.choice([1, 1, 2, 3, 4, 6])) for _ in range(int(rng.integers(1, 6)))]
    old_in: list[int] = []
    old_out: list[int] = []
    for size in sizes:
        how = rng.integers(0, 4)
        if how == 0 or size == 1:
            old_in.append(size)
            old_out.append(size)
        elif how == 1:  # merge: in [a, b] -> out [a * b]
            a = int(rng.choice([1, 2, 3]))
            old_in += [a, size]
            old_out.append(a * size)
        elif how == 2 and size in (4, 6):  # split
            old_in.append(size)
            old_out += [2, size // 2]
        else:  # an axis of 1 inserted in the output
            old_in.append(size)
            old_out += [size, 1]
    new_in = [d if rng.random() < 0.6 else int(rng.integers(1, 7)) for d in old_in]
    return tuple(old_in), tuple(old_out), tuple(new_in)


PROGRAM = r"""
#include "plugnn/plugin_common.h"
#include <stdio.h>
int main(void) {
    unsigned ri, ro;
    while (scanf("%u %u", &ri, &ro) == 2) {
        int64_t in[PN_MAX_DIMS], out[PN_MAX_DIMS], at[PN_MAX_DIMS], got[PN_MAX_DIMS];
        long long v;
        for (unsigned i = 0; i < ri; ++i) { scanf("%lld", &v); in[i] = v; }
        for (unsigned i = 0; i < ro; ++i) { scanf("%lld", &v); out[i] = v; }
        for (unsigned i = 0; i < ri; ++i) { scanf("%lld", &v); at[i] = v; }
        pn_reshape_groups g;
        if (!pn_reshape_groups_make(ri, in, ro, out, &g) || !pn_reshape_groups_apply(&g, at, got)) {
            printf("none\n");
            continue;
        }
        for (unsigned j = 0; j < ro; ++j) printf("%lld ", (long long)got[j]);
        printf("\n");
    }
    return 0;
}
"""


def test_plugin_commons_c_gives_the_same_dims_as_the_runtime(tmp_path: Path) -> None:
    compiler = shutil.which("gcc")
    library = PACKAGE_DIR / "lib" / "libplugnn_plugin_common.a"
    if compiler is None:
        pytest.fail("gcc is needed to build plugins")
    assert library.is_file(), library
    source = tmp_path / "groups.c"
    source.write_text(PROGRAM)
    binary = tmp_path / "groups"
    subprocess.run([compiler, "-std=c99", "-Wall", "-Werror", f"-I{PACKAGE_DIR / 'include'}", str(source),
                    str(library), "-lm", "-o", str(binary)], check=True, capture_output=True, text=True)
    rng = np.random.default_rng(2026)
    cases = [(a, b, c) for a, b, c, _ in CASES if len(c) == len(a)] + [random_case(rng) for _ in range(3000)]
    text = "".join(f"{len(a)} {len(b)} {' '.join(map(str, (*a, *b, *c)))}\n" for a, b, c in cases)
    out = subprocess.run([str(binary)], input=text, check=True, capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(cases)
    derived = 0
    for (old_in, old_out, new_in), line in zip(cases, out):
        want = regrouped(old_in, old_out, new_in)
        got = None if line.strip() == "none" else tuple(int(x) for x in line.split())
        assert got == want, (old_in, old_out, new_in)
        derived += want is not None and new_in != old_in
    assert derived > 500  # the random cases mostly change dims the rule derives
