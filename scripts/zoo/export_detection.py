"""Exports detection models whose heads have data-dependent shapes (NonZero, TopK with a computed
k, NonMaxSuppression) for the run-time-shapes tests and benchmark: torchvision's SSDlite320 and
Faster R-CNN (MobileNetV3-Large 320 FPN) with random weights, and a YOLO-style network (the zoo's
TinyYolo) with its post-processing (score filter, class-aware NMS, top detections) in the graph.

Nothing is downloaded (`weights=None`, `weights_backbone=None`). Thresholds are chosen so that
boxes survive with random weights: SSDlite keeps its score threshold of 0.001 (softmax scores
over 91 classes are about 0.011), Faster R-CNN's box threshold is 0.005 (its default 0.05 keeps
nothing), TinyYolo's is 0.3 on objectness x class score (so the number of candidates differs from image to image). BatchNorm layers are calibrated as the
zoo's (scripts/zoo/export.py, `calibrate_batchnorm`: running_mean 0, running_var the mean square
of the input), so random activations neither vanish nor blow up layer after layer.

Each model takes `image` [1, 3, 320, 320] float32 and gives `boxes` [n, 4] (x1, y1, x2, y2),
`scores` [n] and `labels` [n] int64, n decided by the data. Written stripped of their weights
(tests/zoo/weights.py: filled back from a seed) to tests/detection/models/<name>.onnx with
tests/detection/manifest.json.

Use the zoo's export environment (scripts/zoo/README.md: torch 2.14.1, torchvision 0.29.1):

    python scripts/zoo/export_detection.py [--only NAME] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "zoo"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import weights  # noqa: E402 - the zoo's stripping, next to its filling
import modules  # noqa: E402 - the zoo's own small networks (TinyYolo)

OPSET = 17
SIDE = 320
OUTPUTS = ["boxes", "scores", "labels"]


class FirstImage(nn.Module):
    """A torchvision detector as a graph of one image: [1, 3, H, W] -> its boxes, scores, labels."""

    def __init__(self, detector: nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        found = self.detector([image[0]])[0]
        return found["boxes"], found["scores"], found["labels"]


class YoloWithNms(nn.Module):
    """TinyYolo's raw detections [1, anchors, 5 + classes] (x, y, w, h, objectness, class scores),
    then what a YOLO deployment adds: score = objectness x best class score, the anchors above
    `threshold` (NonZero), class-aware NMS (torchvision.ops.batched_nms: NonMaxSuppression over
    boxes offset per class), the `keep` best."""

    def __init__(self, threshold: float = 0.3, iou: float = 0.45, keep: int = 100) -> None:
        super().__init__()
        self.yolo = modules.TinyYolo()
        self.threshold, self.iou, self.keep = threshold, iou, keep

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        from torchvision.ops import batched_nms

        raw = self.yolo(image)[0]
        xy, wh = raw[:, :2], raw[:, 2:4]
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], 1)
        best, labels = (raw[:, 5:] * raw[:, 4:5]).max(1)
        chosen = torch.where(best > self.threshold)[0]
        boxes, best, labels = boxes[chosen], best[chosen], labels[chosen]
        kept = batched_nms(boxes, best, labels, self.iou)[: self.keep]
        return boxes[kept], best[kept], labels[kept]


def ssdlite() -> tuple[nn.Module, str]:
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    return FirstImage(ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)), \
        "torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)"


def faster_rcnn() -> tuple[nn.Module, str]:
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    return FirstImage(fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                            box_score_thresh=0.005)), \
        ("torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, "
         "box_score_thresh=0.005)")


def yolo() -> tuple[nn.Module, str]:
    return YoloWithNms(), "scripts/zoo/export_detection.py YoloWithNms(threshold=0.3, iou=0.45, keep=100)"


MODELS: dict[str, Callable[[], tuple[nn.Module, str]]] = {
    "ssdlite320": ssdlite, "fasterrcnn_mobilenet_320": faster_rcnn, "yolo_nms": yolo}


def calibrate_batchnorm(model: nn.Module, image: torch.Tensor) -> int:
    """The zoo's calibration (scripts/zoo/export.py, calibrate_batchnorm) on one image: every
    BatchNorm's running_mean 0 and running_var the mean square of its input, layer after layer."""
    from torchvision.ops.misc import FrozenBatchNorm2d

    norms = [m for m in model.modules() if isinstance(m, (nn.modules.batchnorm._BatchNorm, FrozenBatchNorm2d))]

    def calibrate(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        x = args[0].double()
        module.running_mean.zero_()
        module.running_var.fill_(float((x * x).mean()))

    handles = [m.register_forward_pre_hook(calibrate) for m in norms]
    try:
        with torch.no_grad():
            model(image)
    finally:
        for handle in handles:
            handle.remove()
    return len(norms)


def export_one(name: str, out_dir: Path) -> dict[str, Any]:
    torch.manual_seed(zlib.crc32(name.encode()))
    model, source = MODELS[name]()
    model.eval()
    image = torch.randn(1, 3, SIDE, SIDE)
    norms = calibrate_batchnorm(model, image)
    path = out_dir / "models" / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        found = model(image)
        torch.onnx.export(model, (image,), str(path), input_names=["image"], output_names=OUTPUTS,
                          dynamic_axes={n: {0: "detections"} for n in OUTPUTS}, opset_version=OPSET,
                          dynamo=False)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    stripped = weights.strip(proto)
    onnx.save(proto, str(path))
    return {"name": name, "file": f"models/{name}.onnx", "source": source, "opset": OPSET,
            "inputs": [{"name": "image", "dtype": "float32", "dims": [1, 3, SIDE, SIDE]}], "outputs": OUTPUTS,
            "detections_at_export": int(found[0].shape[0]), "batchnorm_calibrated": norms, "strip": stripped,
            "operators": weights.operators(proto),
            "versions": {"torch": torch.__version__, "torchvision": __import__("torchvision").__version__,
                         "onnx": onnx.__version__}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(MODELS))
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "detection")
    args = parser.parse_args()
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": []}
    entries = {e["name"]: e for e in manifest["models"]}
    for name in args.only or sorted(MODELS):
        entries[name] = export_one(name, args.out)
        print(f"{name}: {entries[name]['file']}, {entries[name]['detections_at_export']} detections at export")
    manifest["models"] = [entries[n] for n in sorted(entries)]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
