"""What a person sees of a big network: explain() and its drawing stay readable at 250 layers
(one screen: at most 50 lines of at most 100 columns), names shortened and still unique, fused
layers and fallbacks summarized by pattern with counts; the full record behind verbose=True."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import plugnn
from plugnn import MissingDependencyError, Network, Runtime, optimize
from plugnn.graph_dot import render
from plugnn.naming import short_name, short_names


def big_network(blocks: int = 50) -> Network:
    """250 layers named the way torch's exporter names them: per block conv, relu, LRN (CpuAcc
    falls back to CpuRef for it), conv, add."""
    rng = np.random.default_rng(0)
    net = Network("big")
    x = net.add_input("image", (1, 8, 6, 6))
    for b in range(blocks):
        stage, unit = divmod(b, 5)
        prefix = f"/features/features.{stage}/features.{stage}.{unit}/block"
        w1 = (rng.standard_normal((8, 8, 3, 3)) * 0.1).astype(np.float32)
        w2 = (rng.standard_normal((8, 8, 1, 1)) * 0.1).astype(np.float32)
        y = net.add_convolution2d(x, w1, padding=1, name=f"{prefix}/block.0/block.0.0/Conv")
        y = net.add_activation(y, "relu", name=f"{prefix}/block.0/block.0.2/Relu")
        y = net.add_lrn(y, 3, 1e-4, 0.75, 1.0, name=f"{prefix}/block.1/lrn/LRN")
        y = net.add_convolution2d(y, w2, name=f"{prefix}/block.2/fc2/Conv")
        x = net.add_add(x, y, name=f"{prefix}/Add")
    net.add_output(x, "out")
    return net


def test_short_names_are_readable_and_unique() -> None:
    assert short_name("/features/features.6/features.6.1/block/block.2/fc2/Conv") == "features.6.1/block.2/fc2/Conv"
    assert short_name("/layer1/layer1.0/conv1/Conv") == "layer1.0/conv1/Conv"
    assert short_name("/a/a.1/block/block.1/avgpool/Pool../a/a.1/block/block.1/fc1/Conv") == \
        "a.1/block.1/avgpool/Pool..fc1/Conv"
    names = [f"/m/m.{i}/block/block.{j}/fc2/Conv+scale/Sigmoid" for i in range(3) for j in range(3)]
    short = short_names(names + ["/x/y", "x/y"])
    assert len(set(short.values())) == len(short) == 11
    assert all(len(s) < len(n) for n, s in short.items() if n.startswith("/m"))


def test_explain_of_250_layers_fits_one_screen() -> None:
    net = big_network()
    assert len(net.layers) - 2 - 100 == 250  # input, output and the 100 weight constants aside
    with Runtime() as runtime:
        optimized = optimize(net, runtime, ["CpuAcc", "CpuRef"])
        text = optimized.explain()
        lines = text.splitlines()
        assert len(lines) <= 50 and max(map(len, lines)) <= 100, text
        assert "fallback: CpuAcc refused 50 layers (LocalResponseNormalization x50) -> CpuRef\n" \
               "  why: CpuAcc has no LocalResponseNormalization kernel (e.g. features.0.0/block.1/lrn/LRN)" in text
        assert "fused by CpuAcc:" in text and "from Convolution2d + Activation" in text
        assert "CpuAcc   " in text and "layers in" in text and "runs:" in text
        full = optimized.explain(verbose=True)
        assert len(full.splitlines()) > 250 and "/features/features.9/features.9.4/block/Add" in full
        assert optimized.explain(verbose=False) == text


def test_a_small_network_is_explained_in_full_by_default() -> None:
    net = big_network(blocks=2)
    with Runtime() as runtime:
        optimized = optimize(net, runtime, ["CpuRef"])
        assert optimized.explain() == optimized.explain(verbose=True)
        assert "preference: CpuRef: yes" in optimized.explain()
        with pytest.raises(plugnn.PlugnnError, match="takes 'text' or 'dot'"):
            optimized.explain(format="html")


def test_the_drawing_marks_backends_fallbacks_and_fused_layers(tmp_path: Path) -> None:
    with Runtime() as runtime:
        optimized = optimize(big_network(blocks=4), runtime, ["CpuAcc", "CpuRef"])
        dot = optimized.explain(format="dot")
    assert dot.startswith('digraph "big" {') and dot.rstrip().endswith("}")
    lrn = next(line for line in dot.splitlines() if "features.0.0/block.1/lrn/LRN" in line)
    assert "fallback: refused by CpuAcc" in lrn and 'color="#d62828"' in lrn and "on CpuRef" in lrn
    assert any("fused: stands for 2 layers" in line and "peripheries=2" in line for line in dot.splitlines())
    assert 'legend0 [label="CpuAcc"' in dot and 'legend1 [label="CpuRef"' in dot
    assert render(dot, tmp_path / "g.dot").read_text() == dot
    if shutil.which("dot") is not None:
        svg = render(dot, tmp_path / "g.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "features.0.0/block.1/lrn/LRN" in svg
    else:
        with pytest.raises(MissingDependencyError, match="needs Graphviz's 'dot' program"):
            render(dot, tmp_path / "g.svg")
    with pytest.raises(plugnn.PlugnnError, match=r"\.dot/\.gv text or rendered as \.svg, \.png, \.pdf; not \.txt"):
        render(dot, tmp_path / "g.txt")


def test_rendering_without_graphviz_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)  # the Python package absent too
    with pytest.raises(MissingDependencyError, match=r"install Graphviz \(apt-get install graphviz"):
        render("digraph g {}", tmp_path / "g.png")


def test_placement_keeps_a_type_whose_label_holds_commas_whole() -> None:
    from collections import Counter

    from plugnn.explain import placement_lines

    label = "Precompiled(matmul [*, 64] x [64, 64] + bias)"
    long_label = "Precompiled(attention: 1 x 4 batch(es) of [128, 16] x [128, 16]^T, scale 0.25, mask, softmax)"
    runs = [{"backend": "CpuAcc", "first": 1, "last": 5, "layers": list("abcde"),
             "types": Counter({label: 2, long_label: 2, "Gather": 1})}]
    lines = placement_lines(runs)
    assert any(f"{label} x2," in line for line in lines)
    assert all(len(line) <= 100 for line in lines)
    # the long one is clipped on its own line, never broken at one of its commas
    (clipped,) = [line for line in lines if "Precompiled(attention" in line]
    assert clipped.strip().startswith("Precompiled(attention") and clipped.endswith("...")
    assert not any(line.strip().startswith(("16]", "scale", "mask", "64]")) for line in lines)
