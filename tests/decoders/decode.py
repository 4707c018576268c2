"""Greedy decoding with a KV cache, the way an application drives an exported decoder: the
prompt as one step with an empty cache, then one token per step with the cache fed back
(`present.*` -> `past_key_values.*`); an encoder-decoder (T5) runs its encoder once on the
source, then its decoder from the start token the same way. Used by the decode tests and
scripts/decode_bench.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

DECODERS_DIR = Path(__file__).resolve().parent
MANIFEST = DECODERS_DIR / "manifest.json"

Run = Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]]


def entries(kind: str | None = None) -> dict[str, dict[str, Any]]:
    """The exported models by name; `kind`: "decoder" or "encoder_decoder" only."""
    found = {e["name"]: e for e in json.loads(MANIFEST.read_text())["models"]}
    return {n: e for n, e in found.items() if kind is None or e.get("kind", "decoder") == kind}


def model_path(entry: Mapping[str, Any]) -> Path:
    """The decoder's graph (an encoder-decoder's decoder with its cache)."""
    return DECODERS_DIR / entry["file"]


def encoder_path(entry: Mapping[str, Any]) -> Path:
    """An encoder-decoder's encoder graph."""
    return DECODERS_DIR / entry["encoder_file"]


def empty_cache(entry: Mapping[str, Any], batch: int) -> dict[str, np.ndarray]:
    """Every `past_key_values.*` input with a past of 0."""
    return {f"past_key_values.{i}.{part}": np.zeros((batch, entry["kv_heads"], 0, entry["head_dim"]), np.float32)
            for i in range(entry["layers"]) for part in ("key", "value")}


def _step(run: Run, feed: dict[str, np.ndarray], cache: Mapping[str, np.ndarray], tokens: list[np.ndarray],
          seconds: list[float]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One timed call: the greedy token (appended to `tokens`) and the cache to feed back."""
    start = time.perf_counter()
    outputs = run(feed)
    seconds.append(time.perf_counter() - start)
    chosen = outputs["logits"][:, -1].argmax(-1).astype(np.int64)
    tokens.append(chosen)
    return chosen, {name: outputs[name.replace("past_key_values", "present")] for name in cache}


def greedy(run: Run, entry: Mapping[str, Any], batch: int, prompt: int, steps: int, seed: int = 0
           ) -> tuple[np.ndarray, list[float]]:
    """The tokens chosen [batch, steps + 1] (the prompt's next token, then one per step) and the
    seconds each call took (the prompt's first)."""
    rng = np.random.default_rng(seed)
    current = rng.integers(0, entry["vocab"], (batch, prompt)).astype(np.int64)
    cache = empty_cache(entry, batch)
    length = 0
    tokens, seconds = [], []
    for _ in range(steps + 1):
        total = length + current.shape[1]
        feed = {"input_ids": current, "attention_mask": np.ones((batch, total), np.int64), **cache}
        if entry["position_ids"]:
            feed["position_ids"] = np.ascontiguousarray(np.broadcast_to(np.arange(length, total), current.shape))
        chosen, cache = _step(run, feed, cache, tokens, seconds)
        length = total
        current = chosen[:, None]
    return np.stack(tokens, 1), seconds


def greedy_seq2seq(encode: Run, run: Run, entry: Mapping[str, Any], batch: int, source: int, steps: int,
                   seed: int = 0) -> tuple[np.ndarray, list[float]]:
    """An encoder-decoder's tokens [batch, steps + 1] from a random source of `source` tokens:
    `encode` once, then `run` (the decoder) from the start token with an empty cache, one token
    per step; the seconds each decoder call took (the first: start token and empty cache)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, entry["vocab"], (batch, source)).astype(np.int64)
    mask = np.ones((batch, source), np.int64)
    hidden = encode({"input_ids": ids, "attention_mask": mask})["last_hidden_state"]
    cache = empty_cache(entry, batch)
    current = np.full((batch, 1), entry["start_token"], np.int64)
    tokens, seconds = [], []
    for _ in range(steps + 1):
        feed = {"decoder_input_ids": current, "encoder_hidden_states": hidden, "encoder_attention_mask": mask, **cache}
        chosen, cache = _step(run, feed, cache, tokens, seconds)
        current = chosen[:, None]
    return np.stack(tokens, 1), seconds
