"""plugnn.memory_plan: the C planner (libplugnn_runner's pnr_plan_memory) gives the plan the
Python loop gives, and the plan is valid (no two blocks alive at once overlap in address)."""

from __future__ import annotations

import numpy as np
import pytest

from plugnn import memory_plan
from plugnn.memory_plan import ALIGNMENT, Block, plan
from plugnn.step_runner import runner_library


def random_blocks(seed: int, n: int) -> list[Block]:
    rng = np.random.default_rng(seed)
    blocks = []
    for i in range(n):
        first = int(rng.integers(0, n))
        blocks.append(Block(f"t{i}", int(rng.choice([0, 1, 63, 64, 65, 4096, int(rng.integers(1, 1 << 20))])),
                            first, first + int(rng.integers(0, 12))))
    return blocks


def check_valid(blocks: list[Block], result: memory_plan.MemoryPlan) -> None:
    for a in blocks:
        oa, sa = result.offsets[a.key], memory_plan._aligned(max(a.size, 1))
        assert oa % ALIGNMENT == 0 and oa + sa <= result.peak_bytes
        for b in blocks:
            if a is b or a.first > b.last or b.first > a.last:
                continue
            ob, sb = result.offsets[b.key], memory_plan._aligned(max(b.size, 1))
            assert oa + sa <= ob or ob + sb <= oa, (a, b)


@pytest.mark.parametrize("seed", range(6))
def test_the_c_plan_is_the_python_plan_and_valid(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if runner_library() is None:
        pytest.fail("libplugnn_runner did not load (it is built with the package)")
    blocks = random_blocks(seed, 5 + 40 * seed)
    in_c = plan(blocks)
    monkeypatch.setattr(memory_plan, "_plan_in_c", lambda ordered: None)
    in_python = plan(blocks)
    assert in_c == in_python
    check_valid(blocks, in_c)
    assert in_c.naive_bytes == sum(memory_plan._aligned(max(b.size, 1)) for b in blocks)


def test_empty_and_single_plans() -> None:
    assert plan([]).peak_bytes == 0
    one = plan([Block("a", 100, 0, 0)])
    assert one.offsets == {"a": 0} and one.peak_bytes == 128
