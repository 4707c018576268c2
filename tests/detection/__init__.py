"""Detection models whose heads have data-dependent shapes (scripts/zoo/export_detection.py:
torchvision's SSDlite320 and Faster R-CNN MobileNetV3-320-FPN, a YOLO-style network with its NMS
in the graph), stripped of their weights; tests/zoo/weights.py fills them from a seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SIDE = 320


def entries() -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in json.loads((HERE / "manifest.json").read_text())["models"]}


def model_path(entry: dict[str, Any]) -> Path:
    return HERE / entry["file"]


def image(seed: int) -> np.ndarray:
    """A random image [1, 3, 320, 320] (the models' input; random weights detect boxes in noise)."""
    return np.random.default_rng(seed).standard_normal((1, 3, SIDE, SIDE), dtype=np.float32)
