"""Export the model zoo: every model with random weights (no downloads) to ONNX, stripped of weights.

    python scripts/zoo/export.py              # every model
    python scripts/zoo/export.py --list       # names, families, opsets
    python scripts/zoo/export.py --only resnet18 --only bert_tiny

Needs torch, torchvision, transformers, onnx and onnxruntime (a separate venv: see README.md
beside this file). Writes tests/zoo/models/<name>.onnx and updates tests/zoo/manifest.json (the
entries of the models exported now; the others are kept).

Per model: torch.manual_seed(<crc32 of the name>), build it in eval mode, export it with the
TorchScript exporter (dynamo=False, do_constant_folding=True) at the CI shape with batch 2, check
the full-weight ONNX model against torch on onnxruntime at the CI shape (batch 1 and 3) and the
full shape (batch 1), strip its weights (tests/zoo/weights.py: `strip`), and check that the stripped
file, filled from seed 0, runs on onnxruntime with finite outputs.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import warnings
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ZOO = REPO / "tests" / "zoo"
sys.path.insert(0, str(ZOO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import weights  # noqa: E402  (tests/zoo/weights.py)
from torch import nn  # noqa: E402

import modules  # noqa: E402  (scripts/zoo/modules.py)

TOLERANCES = {
    # max |plugnn - onnxruntime| / max |onnxruntime| over each output, by backend set
    "standard": {"CpuRef": 1e-4, "CpuAcc": 1e-3},
}


@dataclass
class Input:
    name: str
    dtype: str
    dims: list[Any]
    values: dict[str, Any]


@dataclass
class Spec:
    name: str
    family: str
    opset: int
    source: str
    build: Callable[[], nn.Module]
    inputs: list[Input]
    outputs: list[tuple[str, list[Any]]]  # name, dims (str = dynamic)
    ci: dict[str, int]
    full: dict[str, int]
    notes: str = ""
    tolerance: str = "standard"
    reinit: dict[str, float] = field(default_factory=dict)  # parameter -> std of a normal(0, std) re-initialization


def image_input(dynamic_spatial: bool = True) -> list[Input]:
    dims = ["batch", 3, "height", "width"] if dynamic_spatial else ["batch", 3, 224, 224]
    return [Input("image", "float32", dims, {"kind": "normal", "mean": 0.0, "std": 1.0})]


def text_inputs(vocab: int, mask: bool = True, token_types: bool = False) -> list[Input]:
    ids = [Input("input_ids", "int64", ["batch", "sequence"], {"kind": "integers", "low": 0, "high": vocab})]
    if mask:
        ids.append(Input("attention_mask", "int64", ["batch", "sequence"], {"kind": "ones"}))
    if token_types:
        ids.append(Input("token_type_ids", "int64", ["batch", "sequence"], {"kind": "integers", "low": 0, "high": 2}))
    return ids


TEXT_ARGS = ("input_ids", "attention_mask", "token_type_ids")  # the transformers keyword arguments
IMG_CI = {"height": 64, "width": 64}
IMG_FULL = {"height": 224, "width": 224}
SEQ_CI = {"sequence": 32}
SEQ_FULL = {"sequence": 128}
CLASSIFIER_OUT = [("logits", ["batch", 1000])]

# ---- the registry -------------------------------------------------------------------------------

SPECS: list[Spec] = []


def add(spec: Spec) -> None:
    SPECS.append(spec)


def torchvision_classification() -> None:
    import torchvision.models as tvm

    dynamic = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "squeezenet1_1",
               "densenet121", "regnet_y_400mf", "googlenet", "shufflenet_v2_x1_0", "mnasnet0_5"]
    kwargs = {"googlenet": {"aux_logits": False, "init_weights": True}}
    for name in dynamic:
        add(Spec(name, "torchvision-classification", 13, f"torchvision.models.{name}(weights=None)",
                 lambda n=name: getattr(tvm, n)(weights=None, **kwargs.get(n, {})),
                 image_input(), CLASSIFIER_OUT, IMG_CI, IMG_FULL))
    for name in ("alexnet", "vgg11"):
        add(Spec(name, "torchvision-classification", 13, f"torchvision.models.{name}(weights=None)",
                 lambda n=name: getattr(tvm, n)(weights=None), image_input(dynamic_spatial=False), CLASSIFIER_OUT,
                 {}, {}, notes="spatial size fixed at 224x224: AdaptiveAvgPool2d to a size other than 1x1 exports "
                               "only with static input sizes, and the classifier's first Linear needs its 6x6 / 7x7 map"))
    add(Spec("convnext_tiny", "torchvision-classification", 17, "torchvision.models.convnext_tiny(weights=None)",
             lambda: tvm.convnext_tiny(weights=None), image_input(), CLASSIFIER_OUT, IMG_CI, IMG_FULL))
    def swin() -> nn.Module:
        from torchvision.models.swin_transformer import SwinTransformer

        return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[7, 7],
                               stochastic_depth_prob=0.0)

    add(Spec("swin_tiny", "torchvision-classification", 17,
             "torchvision.models.swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], "
             "num_heads=[2, 4], window_size=[7, 7], stochastic_depth_prob=0.0)",
             swin, image_input(dynamic_spatial=False), CLASSIFIER_OUT, {}, {},
             notes="a 2-stage Swin (each stage a window block and a shifted-window block, patch merging between): "
                   "swin_t's stripped graph is 1144.5 KB (6285 nodes, 80 % of the bytes node and value names). "
                   "Spatial size fixed at 224x224: whether a block shifts its windows is decided from the feature "
                   "map's size at export time (the graph traced at 64x64 differs from torch at 224x224 by 1.8e-2)"))

    def vit() -> nn.Module:
        from torchvision.models.vision_transformer import VisionTransformer

        return VisionTransformer(image_size=224, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=256)

    add(Spec("vit_tv_tiny", "torchvision-classification", 17,
             "torchvision.models.vision_transformer.VisionTransformer(image_size=224, patch_size=16, num_layers=2, "
             "num_heads=4, hidden_dim=64, mlp_dim=256)",
             vit, image_input(dynamic_spatial=False), CLASSIFIER_OUT, {}, {},
             reinit={"heads.head.weight": 0.02},
             notes="vit_b_16's layers (nn.MultiheadAttention) at 2 layers and hidden size 64: vit_b_16's stripped "
                   "graph is 424.9 KB (2068 nodes). Spatial size fixed at 224x224 (197 position embeddings). "
                   "torchvision initializes the head's weight to zeros (logits = bias = 0 for any input): the export "
                   "re-initializes it as normal(0, 0.02)"))


def torchvision_segmentation() -> None:
    from torchvision.models import segmentation as seg

    for name in ("deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "fcn_resnet50"):
        add(Spec(name, "torchvision-segmentation", 13,
                 f"torchvision.models.segmentation.{name}(weights=None, weights_backbone=None)",
                 lambda n=name: modules.Outputs(getattr(seg, n)(weights=None, weights_backbone=None), ("out",)),
                 image_input(), [("out", ["batch", 21, "height", "width"])], IMG_CI, IMG_FULL))


def video_input() -> list[Input]:
    return [Input("video", "float32", ["batch", 3, "frames", "height", "width"],
                  {"kind": "normal", "mean": 0.0, "std": 1.0})]


VIDEO_CI = {"frames": 4, "height": 32, "width": 32}
VIDEO_FULL = {"frames": 8, "height": 112, "width": 112}


def torchvision_video() -> None:
    from torchvision.models import video

    # 3-D convolutions: R3D-18's 3x3x3 everywhere, R(2+1)D-18's 1x3x3 / 3x1x1 pairs (issue 35)
    for name in ("r3d_18", "r2plus1d_18"):
        add(Spec(name, "torchvision-video", 13, f"torchvision.models.video.{name}(weights=None)",
                 lambda n=name: getattr(video, n)(weights=None), video_input(), [("logits", ["batch", 400])],
                 VIDEO_CI, VIDEO_FULL))


def detection_backbone() -> None:
    def build() -> nn.Module:
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

        return modules.Outputs(resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=5),
                               ("0", "1", "2", "3", "pool"))

    outs = [(f"p{i}", ["batch", 256, f"p{i}_height", f"p{i}_width"]) for i in (2, 3, 4, 5, 6)]
    add(Spec("resnet50_fpn", "detection-backbone", 13,
             "torchvision.models.detection.backbone_utils.resnet_fpn_backbone(backbone_name='resnet50', "
             "weights=None, trainable_layers=5)",
             build, image_input(), outs, IMG_CI, IMG_FULL,
             notes="Faster R-CNN / RetinaNet's backbone + FPN (FrozenBatchNorm2d exports as Mul/Add); outputs at "
                   "strides 4, 8, 16, 32 and the extra max-pooled level"))


def hf_transformers() -> None:
    def bert(opset_note: str = "") -> nn.Module:
        from transformers import BertConfig, BertModel

        config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=256, max_position_embeddings=512, type_vocab_size=2,
                            attn_implementation="eager")
        return modules.Outputs(BertModel(config, add_pooling_layer=True).eval(),
                               ("last_hidden_state", "pooler_output"), TEXT_ARGS)

    bert_source = ("transformers.BertModel(BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, "
                   "num_attention_heads=4, intermediate_size=256, max_position_embeddings=512, "
                   "attn_implementation='eager'))")
    bert_outputs = [("last_hidden_state", ["batch", "sequence", 64]), ("pooler_output", ["batch", 64])]
    for name, opset in (("bert_tiny", 17), ("bert_tiny_op13", 13)):
        add(Spec(name, "transformers-encoder", opset, bert_source, bert,
                 text_inputs(1000, mask=True, token_types=True), bert_outputs, SEQ_CI, SEQ_FULL,
                 notes="opset 13: LayerNorm decomposed (ReduceMean, Sub, Pow, Sqrt, Div)" if opset == 13 else ""))

    def distilbert() -> nn.Module:
        from transformers import DistilBertConfig, DistilBertModel

        config = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=256,
                                  max_position_embeddings=512, attn_implementation="eager")
        return modules.Outputs(DistilBertModel(config).eval(), ("last_hidden_state",), TEXT_ARGS[:2])

    add(Spec("distilbert_tiny", "transformers-encoder", 17,
             "transformers.DistilBertModel(DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=4, "
             "hidden_dim=256, attn_implementation='eager'))",
             distilbert, text_inputs(1000), [("last_hidden_state", ["batch", "sequence", 64])], SEQ_CI, SEQ_FULL))

    def gpt2() -> nn.Module:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=256, use_cache=False,
                            bos_token_id=999, eos_token_id=999, attn_implementation="eager")
        return modules.Outputs(GPT2LMHeadModel(config).eval(), ("logits",), TEXT_ARGS[:2])

    add(Spec("gpt2_tiny", "transformers-decoder", 17,
             "transformers.GPT2LMHeadModel(GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, "
             "n_positions=256, use_cache=False, attn_implementation='eager'))",
             gpt2, text_inputs(1000), [("logits", ["batch", "sequence", 1000])], SEQ_CI, SEQ_FULL,
             notes="causal language model: causal mask combined with the attention mask at run time"))

    def vit() -> nn.Module:
        from transformers import ViTConfig, ViTForImageClassification

        config = ViTConfig(image_size=224, patch_size=16, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=256, num_labels=10, attn_implementation="eager")
        return modules.Outputs(ViTForImageClassification(config).eval(), ("logits",), ("pixel_values",))

    add(Spec("vit_tiny", "transformers-encoder", 17,
             "transformers.ViTForImageClassification(ViTConfig(image_size=224, patch_size=16, hidden_size=64, "
             "num_hidden_layers=2, num_attention_heads=4, intermediate_size=256, num_labels=10, "
             "attn_implementation='eager'))",
             vit, image_input(dynamic_spatial=False), [("logits", ["batch", 10])], {}, {},
             notes="spatial size fixed at 224x224 (197 position embeddings); cheap at 224 with hidden size 64"))


def own_models() -> None:
    unet_out = [("mask", ["batch", 2, "height", "width"])]
    add(Spec("unet", "unet", 13, "scripts/zoo/modules.py: UNet(base=16, bilinear=False)",
             lambda: modules.UNet(bilinear=False), image_input(), unet_out, IMG_CI, IMG_FULL,
             notes="4 max-pool levels, ConvTranspose2d(k2, s2) upsampling, concat skips; sides divisible by 16"))
    add(Spec("unet_bilinear", "unet", 13, "scripts/zoo/modules.py: UNet(base=16, bilinear=True)",
             lambda: modules.UNet(bilinear=True), image_input(), unet_out, IMG_CI, IMG_FULL,
             notes="bilinear Upsample x2 (align_corners=True) + 1x1 conv instead of ConvTranspose2d"))
    add(Spec("yolo_tiny", "yolo", 13, "scripts/zoo/modules.py: TinyYolo(classes=80, width=16)",
             lambda: modules.TinyYolo(), image_input(), [("detections", ["batch", "boxes", 85])], IMG_CI, IMG_FULL,
             notes="CSP backbone (chunk -> Split), SPPF, nearest upsampling, YOLOv5 Detect head: the decode grid "
                   "is built at run time from the feature maps' sizes (Range); sides divisible by 32"))
    feats = [Input("features", "float32", ["batch", "sequence", 40], {"kind": "normal", "mean": 0.0, "std": 1.0})]
    add(Spec("lstm_bidir", "rnn", 13,
             "scripts/zoo/modules.py: RecurrentTagger('lstm', layers=2, bidirectional=True, batch_first=True)",
             lambda: modules.RecurrentTagger("lstm", layers=2, bidirectional=True, batch_first=True),
             feats, [("scores", ["batch", "sequence", 10])], SEQ_CI, SEQ_FULL))
    add(Spec("gru_seq_first", "rnn", 13,
             "scripts/zoo/modules.py: RecurrentTagger('gru', layers=2, batch_first=False, last_step_only=True)",
             lambda: modules.RecurrentTagger("gru", layers=2, batch_first=False, last_step_only=True),
             [Input("features", "float32", ["sequence", "batch", 40], {"kind": "normal", "mean": 0.0, "std": 1.0})],
             [("scores", ["batch", 10])], SEQ_CI, SEQ_FULL, notes="sequence-first input [sequence, batch, 40]"))
    add(Spec("rnn_tanh", "rnn", 13,
             "scripts/zoo/modules.py: RecurrentTagger('rnn', layers=1, batch_first=True)",
             lambda: modules.RecurrentTagger("rnn", layers=1, batch_first=True),
             feats, [("scores", ["batch", "sequence", 10])], SEQ_CI, SEQ_FULL))
    add(Spec("lstm_text", "rnn", 13, "scripts/zoo/modules.py: TextLSTM(vocab=1000, dim=64, hidden=64, classes=4)",
             lambda: modules.TextLSTM(), text_inputs(1000, mask=False), [("scores", ["batch", 4])], SEQ_CI, SEQ_FULL,
             notes="int64 token ids -> Embedding (Gather) -> LSTM -> final hidden state -> Linear"))
    add(Spec("audio_m5", "audio", 13, "scripts/zoo/modules.py: AudioConv1d(classes=35, channels=32)",
             lambda: modules.AudioConv1d(),
             [Input("waveform", "float32", ["batch", 1, "samples"], {"kind": "uniform", "low": -1.0, "high": 1.0})],
             [("scores", ["batch", 35])], {"samples": 8000}, {"samples": 16000},
             notes="full size: 1 s at 16 kHz"))
    for name, opset in (("mlp_layernorm", 17), ("mlp_layernorm_op13", 13)):
        add(Spec(name, "mlp", opset, "scripts/zoo/modules.py: LayerNormMLP(features=128, hidden=256, classes=10)",
                 lambda: modules.LayerNormMLP(),
                 [Input("features", "float32", ["batch", 128], {"kind": "normal", "mean": 0.0, "std": 1.0})],
                 [("scores", ["batch", 10])], {}, {},
                 notes="LayerNormalization at opset 17; decomposed at 13. GELU (erf) is Div/Erf/Add/Mul at both"))


torchvision_classification()
torchvision_segmentation()
torchvision_video()
detection_backbone()
hf_transformers()
own_models()
BY_NAME = {s.name: s for s in SPECS}
assert len(BY_NAME) == len(SPECS), "duplicate model names"

# ---- export -------------------------------------------------------------------------------------


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def manifest_entry(spec: Spec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "family": spec.family,
        "opset": spec.opset,
        "source": spec.source,
        "file": f"models/{spec.name}.onnx",
        "inputs": [{"name": i.name, "dtype": i.dtype, "dims": i.dims, "values": i.values} for i in spec.inputs],
        "outputs": [{"name": n, "dims": d} for n, d in spec.outputs],
        "shapes": {"ci": {"batch": 1, **spec.ci}, "full": {"batch": 1, **spec.full}},
        "tolerance": {"class": spec.tolerance, "metric": "max |diff| / max |onnxruntime| per output",
                      **TOLERANCES[spec.tolerance]},
        "notes": spec.notes,
        **({"reinitialized": {k: f"normal(0, {v})" for k, v in spec.reinit.items()}} if spec.reinit else {}),
    }


def dynamic_axes(spec: Spec) -> dict[str, dict[int, str]]:
    axes = {}
    for name, dims in [(i.name, i.dims) for i in spec.inputs] + list(spec.outputs):
        dyn = {k: d for k, d in enumerate(dims) if isinstance(d, str)}
        if dyn:
            axes[name] = dyn
    return axes


def session(model: onnx.ModelProto, optimize: bool = True) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def torch_run(model: nn.Module, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(*(torch.from_numpy(v) for v in inputs.values()))
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.numpy() for o in out]


# onnxruntime on the exported model (full weights) against torch: a wrong export is off by O(1); float32
# rounding differs (torch runs convolution then BatchNorm, the export folds them): 2e-7 to 4e-6, and
# 3.4e-4 for EfficientNet-B0 at 224x224 (its BatchNorm calibrated at 64x64)
EXPORT_TOLERANCE = 1e-3
CALIBRATION_BATCH = 16


def calibrate_batchnorm(model: nn.Module, entry: dict[str, Any]) -> str | None:
    """Gives every BatchNorm (and torchvision's FrozenBatchNorm2d) running_mean 0 and, in every
    channel, running_var = the mean square of its input over all its channels, measured in eval mode
    on CALIBRATION_BATCH random inputs at the CI shape, layer after layer in one forward pass (a hook
    sets each layer's statistics just before it runs, so later layers see calibrated activations).
    Weights, gamma and beta are untouched.

    Why: torch starts with running_mean 0 and running_var 1, so in eval mode a BatchNorm passes its
    input through unscaled and a random network shrinks or blows up its activations layer after
    layer (GoogLeNet's logits differ by 1.7e-12 of their size between two inputs, DeepLabV3's not at
    all). Why one scale per layer and no centring: the filled model keeps only each tensor's mean
    and std, not its per-channel structure. Per-channel variances give nearly dead channels scales
    up to 1/sqrt(eps) = 316, which the single std then spreads over all channels (DenseNet-121 then
    overflows to inf); per-channel means fold into biases that cancel torch's channel means but not
    the filled model's, whose activations then drift and lose precision (EfficientNet-B0 filled that
    way: onnxruntime with and without graph optimizations differ by 1.1e-4 of the output's size).
    Scaled this way, the folded biases are beta = 0 exactly and every layer has unit mean square.
    """
    from torchvision.ops.misc import FrozenBatchNorm2d

    norms = [m for m in model.modules() if isinstance(m, (nn.modules.batchnorm._BatchNorm, FrozenBatchNorm2d))]
    if not norms:
        return None

    def calibrate(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        x = args[0].double()
        module.running_mean.zero_()
        module.running_var.fill_(float((x * x).mean()))

    model.eval()
    handles = [m.register_forward_pre_hook(calibrate) for m in norms]
    try:
        inputs = weights.make_inputs(entry, "ci", CALIBRATION_BATCH, seed=100)
        with torch.no_grad():
            model(*(torch.from_numpy(v) for v in inputs.values()))
    finally:
        for h in handles:
            h.remove()
    return (f"{len(norms)} BatchNorm layers: running_mean 0, running_var the mean square of the layer's input "
            f"(eval mode, {CALIBRATION_BATCH} random inputs at the CI shape, make_inputs seed 100)")


def export_one(spec: Spec, out_dir: Path) -> tuple[dict[str, Any], float]:
    entry = manifest_entry(spec)
    started = time.perf_counter()
    torch.manual_seed(seed_of(spec.name))
    model = spec.build().eval()
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        for name, std in spec.reinit.items():
            parameters[name].normal_(0.0, std)
    entry["batchnorm_calibration"] = calibrate_batchnorm(model, entry)
    trace_inputs = weights.make_inputs(entry, "ci", 2, seed=1)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(torch.from_numpy(v) for v in trace_inputs.values()), buffer, dynamo=False,
                          opset_version=spec.opset, do_constant_folding=True,
                          input_names=[i.name for i in spec.inputs], output_names=[n for n, _ in spec.outputs],
                          dynamic_axes=dynamic_axes(spec))
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto)
    full_bytes = len(buffer.getvalue())

    # the export against torch, full weights
    sess = session(proto)
    check = {}
    for kind, batch in (("ci", 1), ("ci", 3), ("full", 1)):
        inputs = weights.make_inputs(entry, kind, batch, seed=2)
        ours = sess.run(None, inputs)
        theirs = torch_run(model, inputs)
        check[f"{kind}_batch{batch}"] = max(weights.relative_difference(o, t) for o, t in zip(ours, theirs))
        if kind == "ci" and batch == 1:
            shapes_ci = [list(o.shape) for o in ours]
        if kind == "full":
            shapes_full = [list(o.shape) for o in ours]
    worst = max(check.values())
    if not worst <= EXPORT_TOLERANCE:
        raise RuntimeError(f"{spec.name}: onnxruntime disagrees with torch: {check}")

    ops = Counter(n.op_type for g in weights._graphs(proto.graph) for n in g.node)
    counts = weights.strip(proto)
    data = proto.SerializeToString()
    path = out_dir / f"{spec.name}.onnx"
    path.write_bytes(data)

    # the stripped file, filled from seed 0: finite outputs; how much two onnxruntime setups differ
    filled = weights.materialize(path, seed=0)
    onnx.checker.check_model(filled)
    inputs = weights.make_inputs(entry, "ci", 1, seed=0)
    optimized = session(filled).run(None, inputs)
    plain = session(filled, optimize=False).run(None, inputs)
    if not all(np.all(np.isfinite(o)) for o in optimized):
        raise RuntimeError(f"{spec.name}: the filled model gives non-finite outputs")
    # every output must depend on the inputs, or a comparison on it says little
    other = session(filled).run(None, weights.make_inputs(entry, "ci", 1, seed=1))
    sensitivity = [weights.relative_difference(a, b) for a, b in zip(other, optimized)]
    if min(sensitivity) < 1e-3:
        raise RuntimeError(f"{spec.name}: an output hardly depends on the inputs: {sensitivity}")

    entry["operators"] = weights.operators(proto)
    entry["operator_counts"] = dict(sorted(ops.items()))
    entry["nodes"] = sum(ops.values())
    entry["parameters"] = int(sum(p.numel() for p in model.parameters()))
    entry["file_bytes"] = len(data)
    entry["unstripped_bytes"] = full_bytes
    entry["strip"] = counts
    for o, ci, full in zip(entry["outputs"], shapes_ci, shapes_full):
        o["shape"] = {"ci": ci, "full": full}
    entry["input_shapes"] = {k: {n: list(s) for n, s in weights.input_shapes(entry, k, 1).items()} for k in ("ci", "full")}
    entry["export_check"] = {
        "torch_vs_onnxruntime": {k: float(f"{v:.3g}") for k, v in check.items()},
        "filled_seed0_output_max_abs": [float(f"{np.abs(o).max():.4g}") for o in optimized],
        "filled_seed0_inputs_seed0_vs_seed1": [float(f"{v:.3g}") for v in sensitivity],
        "onnxruntime_optimized_vs_unoptimized": float(
            f"{max(weights.relative_difference(a, b) for a, b in zip(plain, optimized)):.3g}"),
    }
    return entry, time.perf_counter() - started


def versions() -> dict[str, str]:
    import torchvision
    import transformers

    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxruntime": ort.__version__, "numpy": np.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--only", action="append", metavar="NAME", help="export only NAME (repeatable)")
    parser.add_argument("--out", type=Path, default=ZOO, help="the zoo directory (default: tests/zoo)")
    args = parser.parse_args(argv)
    if args.list:
        for s in SPECS:
            print(f"{s.name:30s} {s.family:28s} opset {s.opset}")
        return 0
    names = args.only or [s.name for s in SPECS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; --list lists them")
    torch.set_num_threads(2)
    models_dir = args.out / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": []}
    entries = {e["name"]: e for e in manifest["models"]}
    failures = {}
    for name in names:
        try:
            entry, seconds = export_one(BY_NAME[name], models_dir)
        except Exception as exc:  # report and go on with the next model
            failures[name] = f"{type(exc).__name__}: {exc}"
            print(f"{name:30s} FAILED {failures[name][:2000]}", flush=True)
            continue
        entries[name] = entry
        print(f"{name:30s} {entry['file_bytes'] / 1024:8.1f} KB  {len(entry['operators']):3d} ops  "
              f"{entry['nodes']:5d} nodes  torch-vs-ort {max(entry['export_check']['torch_vs_onnxruntime'].values()):.2g}  "
              f"{seconds:.0f} s", flush=True)
    manifest = {
        "about": "The plugnn model zoo: graphs without their weights (tests/zoo/weights.py fills them). "
                 "Written by scripts/zoo/export.py; see docs/zoo.md.",
        "versions": versions(),
        "models": [entries[s.name] for s in SPECS if s.name in entries],
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    if failures:
        print(f"{len(failures)} model(s) failed: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
