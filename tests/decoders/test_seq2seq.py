"""An encoder-decoder with a KV cache (scripts/zoo/export_decoders.py: T5 from a transformers
config, seeded weights): the encoder runs once per source, the decoder from the start token one
token per step with its self-attention cache fed back; the tokens are onnxruntime's, the logits
within float32 rounding, and one network serves every decode step, re-sized steadily."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import onnxruntime as ort
import pytest

import plugnn
from decoders import decode
from zoo import weights

STEPS = 8
ENTRY = decode.entries("encoder_decoder")["t5_kv"]


@pytest.fixture(scope="module")
def graphs() -> tuple[bytes, bytes]:
    return (weights.materialize(decode.encoder_path(ENTRY), seed=0).SerializeToString(),
            weights.materialize(decode.model_path(ENTRY), seed=0).SerializeToString())


def runner(session: object) -> Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]]:
    names = [o.name for o in session.get_outputs()]  # type: ignore[attr-defined]
    return lambda feed: dict(zip(names, session.run(None, feed)))  # type: ignore[attr-defined]


@pytest.mark.parametrize("batch, source", [(1, 12), (2, 5)])
def test_t5_tokens_match_onnxruntime_with_one_network_for_the_steps(graphs: tuple[bytes, bytes], batch: int,
                                                                    source: int) -> None:
    encoder, decoder = graphs
    theirs_encoder = runner(ort.InferenceSession(encoder, providers=["CPUExecutionProvider"]))
    theirs_decoder = runner(ort.InferenceSession(decoder, providers=["CPUExecutionProvider"]))
    logits: list[tuple[np.ndarray, np.ndarray]] = []
    with plugnn.InferenceSession(encoder) as ours_encoder, plugnn.InferenceSession(decoder) as ours_decoder:
        hidden: list[tuple[np.ndarray, np.ndarray]] = []

        def encode(feed: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
            ours, theirs = runner(ours_encoder)(feed), theirs_encoder(feed)
            hidden.append((ours["last_hidden_state"], theirs["last_hidden_state"]))
            return theirs

        def step(feed: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
            ours, theirs = runner(ours_decoder)(feed), theirs_decoder(feed)
            logits.append((ours["logits"], theirs["logits"]))
            return theirs  # both runtimes see the same cache and tokens at every step

        tokens, _ = decode.greedy_seq2seq(encode, step, ENTRY, batch, source, STEPS, seed=batch)
        for ours, theirs in hidden + logits:
            assert ours.shape == theirs.shape
            assert np.abs(ours - theirs).max() <= 1e-4 * np.abs(theirs).max()
        # the start token (an empty cache) is one build, every decode step the other one's
        assert ours_decoder.networks_built == 2
        steps = ours_decoder.networks()[-1]
        assert steps["instances_made"] == 1 and steps["instances_resized"] == STEPS - 1
        assert steps["steady_resizes"] >= STEPS - 4  # the full re-sizes: the first, and the arena's growth
    with plugnn.InferenceSession(encoder) as ours_encoder, plugnn.InferenceSession(decoder) as ours_decoder:
        alone, _ = decode.greedy_seq2seq(runner(ours_encoder), runner(ours_decoder), ENTRY, batch, source, STEPS,
                                         seed=batch)
    np.testing.assert_array_equal(alone, tokens)
