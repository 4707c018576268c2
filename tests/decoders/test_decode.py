"""Text generation with a KV cache (scripts/zoo/export_decoders.py: GPT-2- and Llama-style
decoders from transformers configs, seeded weights): every step has a new past length, and one
network built for the decode steps serves them all; the tokens are onnxruntime's, the logits
within float32 rounding (max |diff| <= 1e-4 * max |onnxruntime|)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import plugnn
from decoders import decode
from zoo import weights

STEPS = 5


@pytest.fixture(scope="module", params=sorted(decode.entries("decoder")))
def model(request: pytest.FixtureRequest) -> tuple[dict, bytes]:
    entry = decode.entries()[request.param]
    return entry, weights.materialize(decode.model_path(entry), seed=0).SerializeToString()


@pytest.mark.parametrize("batch", [1, 2])
def test_greedy_tokens_match_onnxruntime_with_one_network_for_the_steps(model: tuple[dict, bytes],
                                                                        batch: int) -> None:
    entry, data = model
    reference = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in reference.get_outputs()]
    logits: list[tuple[np.ndarray, np.ndarray]] = []

    def run_both(session: plugnn.InferenceSession):
        def run(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            ours = dict(zip(names, session.run(None, feed)))
            theirs = dict(zip(names, reference.run(None, feed)))
            logits.append((ours["logits"], theirs["logits"]))
            return theirs  # both runtimes see the same cache and tokens at every step
        return run

    with plugnn.InferenceSession(data) as session:
        tokens, _ = decode.greedy(run_both(session), entry, batch, prompt=8, steps=STEPS, seed=batch)
        for ours, theirs in logits:
            assert ours.shape == theirs.shape
            assert np.abs(ours - theirs).max() <= 1e-4 * np.abs(theirs).max()
        # the prompt (an empty cache: past = 0) is one build, every decode step the other one's
        assert session.networks_built == 2
        steps = session.networks()[-1]
        assert set(steps["symbols"]) >= {"batch", "past"} and steps["specialized"] == {}
        # each step's binding is new: one instance, re-sized in place at every step
        assert steps["instances_made"] == 1 and steps["instances_resized"] == STEPS - 1
        assert len(steps["instances"]) == 1
        # its layers whose shapes follow the cache keep their workloads (ABI 1.3, shapes at execute),
        # the fused attentions included (made again at each length from their payloads, in C):
        # GPT-2's, and Llama's, whose keys and values come through grouped-query attention's
        # Reshape (heads merged: the payload derives it by the Reshape's grouping of axes)
        loaded = session._cache.builds()[-1].network.last_instance.loaded  # noqa: SLF001
        attention = {n.name for n in loaded.optimized.layers
                     if n.kind.name == "PRECOMPILED" and "attention" in n.descriptor.label}
        assert attention and attention <= set(loaded.rebound_layers)
        assert loaded.refused_layers == []
    with plugnn.InferenceSession(data) as session:  # plugnn on its own: the same tokens
        ours_only, _ = decode.greedy(lambda f: dict(zip(names, session.run(None, f))), entry, batch, prompt=8,
                                     steps=STEPS, seed=batch)
    np.testing.assert_array_equal(ours_only, tokens)


def test_the_prompts_and_the_steps_networks_share_one_packed_copy_of_the_weights(model: tuple[dict, bytes]) -> None:
    """The decode steps' build (its guards differ from the prompt's: the cache is not empty) re-sizes
    its workloads from the prompt's network: CpuAcc packs the weights once for both."""
    entry, data = model
    with plugnn.InferenceSession(data, backends=["CpuAcc", "CpuRef"]) as session:
        decode.greedy(lambda f: dict(zip([o.name for o in session.get_outputs()], session.run(None, f))), entry, 1,
                      prompt=8, steps=0)
        packed = int(session.runtime.backend("CpuAcc").get_option("packed_weight_bytes"))
        assert packed > 0
        decode.greedy(lambda f: dict(zip([o.name for o in session.get_outputs()], session.run(None, f))), entry, 1,
                      prompt=8, steps=4)
        assert session.networks_built == 2
        assert int(session.runtime.backend("CpuAcc").get_option("packed_weight_bytes")) == packed


def test_a_long_generation_plans_its_arena_again_a_logarithmic_number_of_times(model: tuple[dict, bytes]) -> None:
    """48 steps after a prompt of 8 (the cache grows from 9 to 56): the arena is planned again
    only when a tensor outgrows twice its room; GPT-2's layers are never fused again."""
    entry, data = model
    plans: set[int] = set()
    kept: list[object] = []
    refused: list[str] = []
    with plugnn.InferenceSession(data) as session:
        names = [o.name for o in session.get_outputs()]

        def run(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            out = dict(zip(names, session.run(None, feed)))
            if feed["input_ids"].shape[1] == 1:  # a decode step
                loaded = session._cache.builds()[-1].network.last_instance.loaded  # noqa: SLF001
                kept.append(loaded.memory_plan)  # alive, so ids stay unique
                plans.add(id(loaded.memory_plan))
                refused.extend(loaded.refused_layers)
            return out

        decode.greedy(run, entry, 1, prompt=8, steps=48, seed=3)
    assert len(kept) == 48
    assert len(plans) <= 4, len(plans)  # about log2(56 / 9) + 1
    if entry["name"] == "gpt2_kv":
        assert refused == []
