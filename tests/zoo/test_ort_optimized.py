"""Zoo transformers passed through onnxruntime's transformer optimizer
(`onnxruntime.transformers.optimizer.optimize_model`, the fusions it writes in onnxruntime's
com.microsoft domain: Attention, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu,
FastGelu): plugnn.InferenceSession loads the optimized file and matches onnxruntime on it at the CI
shape, within the manifest's tolerance (max |diff| / max |onnxruntime| per output), and CpuAcc runs
the fused attention (explain())."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")

import plugnn  # noqa: E402
from zoo import weights  # noqa: E402

# name -> (the optimizer's model_type, the com.microsoft operators it writes for the zoo's graph)
CASES = {
    "bert_tiny": ("bert", {"Attention", "BiasGelu", "EmbedLayerNormalization", "SkipLayerNormalization"}),
    "bert_tiny_op13": ("bert", {"Attention", "BiasGelu", "EmbedLayerNormalization", "SkipLayerNormalization"}),
    "distilbert_tiny": ("bert", {"Attention", "BiasGelu", "EmbedLayerNormalization", "SkipLayerNormalization"}),
    "gpt2_tiny": ("gpt2", {"FastGelu", "SkipLayerNormalization"}),
    "vit_tiny": ("vit", {"BiasGelu", "SkipLayerNormalization"}),
}
HEADS, HIDDEN = 4, 64  # every zoo transformer's configuration (scripts/zoo/export.py)


def optimized(name: str, tmp_path: Path) -> tuple[dict[str, Any], Path, Any]:
    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == name)
    source = tmp_path / f"{name}.onnx"
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), str(source))
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    model = optimizer.optimize_model(str(source), model_type=CASES[name][0], num_heads=HEADS, hidden_size=HIDDEN,
                                     opt_level=0)
    target = tmp_path / f"{name}_optimized.onnx"
    model.save_model_to_file(str(target))
    return entry, target, model.model


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_optimized_transformer_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    entry, path, proto = optimized(name, tmp_path)
    fused = {n.op_type for n in proto.graph.node if n.domain == "com.microsoft"}
    assert fused == CASES[name][1]
    feeds = weights.make_inputs(entry, "ci", 1, seed=0)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    session = plugnn.InferenceSession(str(path))
    got = session.run(None, feeds)
    tolerance = entry["tolerance"]["CpuAcc"]
    for spec, g, w in zip(entry["outputs"], got, want):
        assert g.shape == w.shape, spec["name"]
        assert float(np.abs(g - w).max()) <= tolerance * float(np.abs(w).max()), spec["name"]
    if "Attention" in fused and "CpuAcc" in session.get_providers():
        loaded = session.loaded_for({k: v.shape for k, v in feeds.items()})
        assert "Precompiled(attention" in loaded.optimized.explain()
