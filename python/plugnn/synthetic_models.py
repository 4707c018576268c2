"""ONNX models with seeded random weights, built with `onnx.helper`: no download needed.

Used by the tests (plugnn against onnxruntime), by `plugnn run` examples and by the
benchmarks. Every builder returns an `onnx.ModelProto` with opset 17 and IR version 8 (so
onnxruntime 1.17 and later accept it) and a fixed batch size; weights come from
`numpy.random.default_rng(seed)`, He-scaled so activations stay O(1) through deep stacks.
`onnx` is imported lazily: importing this module needs only NumPy.

    small_cnn(batch)                 the `plugnn run` demo network as ONNX (same weights)
    mnist_cnn(batch)                 LeNet-style 1x28x28 classifier with Reshape (like model zoo mnist)
    resnet18(batch, image=224)       ResNet-18 (basic blocks, BN, residual adds, Gemm 1000)
    mobilenet_v2(batch, image=224)   MobileNetV2 (inverted residuals, depthwise 3x3, Clip(0, 6))

`save(model, path)` writes one to disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

OPSET = 17
IR_VERSION = 8


class _Builder:
    """Accumulates nodes and initializers; every helper returns its output's name."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.names: set[str] = set()

    def _unique(self, base: str) -> str:
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        return name

    def constant(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self._unique(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        from onnx import helper

        output = self._unique(name)
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    # -- layers with seeded weights --------------------------------------------------------

    def conv(self, x: str, cin: int, cout: int, kernel: int, name: str, stride: int = 1, groups: int = 1,
             bias: bool = False, weight: np.ndarray | None = None, bias_value: np.ndarray | None = None) -> str:
        if weight is None:
            fan_in = cin // groups * kernel * kernel
            weight = (self.rng.standard_normal((cout, cin // groups, kernel, kernel))
                      * np.sqrt(2.0 / fan_in)).astype(np.float32)
        inputs = [x, self.constant(f"{name}.weight", weight)]
        if bias or bias_value is not None:
            if bias_value is None:
                bias_value = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
            inputs.append(self.constant(f"{name}.bias", bias_value))
        pad = kernel // 2
        return self.node("Conv", inputs, name, kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad, pad, pad, pad], group=groups)

    def bn(self, x: str, channels: int, name: str, params: dict[str, np.ndarray] | None = None,
           gamma: tuple[float, float] = (0.5, 1.0)) -> str:
        if params is None:
            params = {
                "scale": self.rng.uniform(*gamma, channels).astype(np.float32),
                "bias": (self.rng.standard_normal(channels) * 0.1).astype(np.float32),
                "mean": (self.rng.standard_normal(channels) * 0.1).astype(np.float32),
                "var": self.rng.uniform(0.5, 1.5, channels).astype(np.float32),
            }
        inputs = [x] + [self.constant(f"{name}.{role}", params[role]) for role in ("scale", "bias", "mean", "var")]
        return self.node("BatchNormalization", inputs, name, epsilon=1e-5)

    def relu(self, x: str, name: str) -> str:
        return self.node("Relu", [x], name)

    def relu6(self, x: str, name: str) -> str:
        low = self.constant(f"{name}.min", np.array(0.0, np.float32))
        high = self.constant(f"{name}.max", np.array(6.0, np.float32))
        return self.node("Clip", [x, low, high], name)

    def gemm(self, x: str, cin: int, cout: int, name: str, weight: np.ndarray | None = None,
             bias: np.ndarray | None = None) -> str:
        """Gemm with weight stored [out, in] and transB=1, as PyTorch exports it."""
        if weight is None:
            weight = (self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / cin)).astype(np.float32)
        if bias is None:
            bias = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        return self.node("Gemm", [x, self.constant(f"{name}.weight", weight), self.constant(f"{name}.bias", bias)],
                         name, transB=1)

    def model(self, graph_name: str, input_name: str, input_shape: tuple[int, ...], output: str,
              output_name: str, output_shape: tuple[int, ...]) -> Any:
        from onnx import TensorProto, helper

        last = self.nodes[-1]  # the graph output is the last node's, renamed
        assert list(last.output) == [output], "the output must come from the last node"
        last.output[0] = output_name
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, list(input_shape))],
            [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, list(output_shape))],
            initializer=self.initializers)
        model = helper.make_model(graph, producer_name="plugnn.synthetic_models",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        from onnx import checker

        checker.check_model(model)
        return model


def small_cnn(batch: int = 1, seed: int = 0) -> Any:
    """The `plugnn run` demo network (plugnn.demo) as ONNX: input "image" (batch, 3, 32, 32),
    output "probabilities" (batch, 10); the same weights as `plugnn.demo.network(batch, seed)`."""
    from plugnn import demo

    params = demo.weights(seed)
    strides = {name: stride for name, _, _, stride in demo.CONVOLUTIONS}
    channels = {name: cout for name, _, cout, _ in demo.CONVOLUTIONS}
    b = _Builder(seed)

    def conv_bn(x: str, name: str, relu: bool = True) -> str:
        p = params[name]
        y = b.conv(x, p["w"].shape[1], channels[name], 3, name, stride=strides[name], weight=p["w"],
                   bias_value=p["b"])
        y = b.bn(y, channels[name], f"{name}_bn", params=p)
        return b.relu(y, f"{name}_relu") if relu else y

    y = conv_bn(demo.INPUT_NAME, "stem")
    y = b.node("MaxPool", [y], "pool", kernel_shape=[2, 2], strides=[2, 2])
    for block, skip_from in (("block1", None), ("block2", "down")):
        if skip_from is not None:
            y = conv_bn(y, skip_from)
        h = conv_bn(y, f"{block}_conv1")
        h = conv_bn(h, f"{block}_conv2", relu=False)
        y = b.relu(b.node("Add", [h, y], f"{block}_add"), f"{block}_relu")
    y = b.node("GlobalAveragePool", [y], "gap")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.node("Gemm", [y, b.constant("fc.weight", params["fc_w"]), b.constant("fc.bias", params["fc_b"])], "fc")
    y = b.node("Softmax", [y], "softmax", axis=-1)
    return b.model("small_cnn", demo.INPUT_NAME, (batch, 3, demo.IMAGE, demo.IMAGE), y, demo.OUTPUT_NAME,
                   (batch, demo.CLASSES))


def mnist_cnn(batch: int = 1, seed: int = 0) -> Any:
    """LeNet-style: input "Input3" (batch, 1, 28, 28) -> conv 5x5 8, relu, max 2, conv 5x5 16, relu,
    max 3 (stride 3), Reshape to (batch, 256) with a constant shape, Gemm 10 -> "Plus214_Output_0"
    (the names of the ONNX model zoo's mnist-8, which this mirrors)."""
    b = _Builder(seed)
    y = b.relu(b.conv("Input3", 1, 8, 5, "conv1", bias=True), "relu1")
    y = b.node("MaxPool", [y], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    y = b.relu(b.conv(y, 8, 16, 5, "conv2", bias=True), "relu2")
    y = b.node("MaxPool", [y], "pool2", kernel_shape=[3, 3], strides=[3, 3])
    y = b.node("Reshape", [y, b.constant("shape", np.array([batch, 256], np.int64))], "reshape")
    y = b.gemm(y, 256, 10, "fc")
    return b.model("mnist_cnn", "Input3", (batch, 1, 28, 28), y, "Plus214_Output_0", (batch, 10))


def resnet18(batch: int = 1, image: int = 224, seed: int = 0) -> Any:
    """ResNet-18: input "input" (batch, 3, image, image) -> "logits" (batch, 1000).

    Stem conv 7x7 stride 2 (64) + BN + relu, max pool 3x3 stride 2 pad 1; four stages of two
    basic blocks (conv 3x3, BN, relu, conv 3x3, BN, + shortcut, relu) with 64, 128, 256, 512
    channels, the first block of stages 2-4 with stride 2 and a 1x1 stride-2 conv + BN
    shortcut; global average pool, flatten, Gemm 1000. `image` must be a multiple of 32.
    """
    if image % 32:
        raise ValueError(f"resnet18: image must be a multiple of 32, got {image}")
    b = _Builder(seed)
    y = b.relu(b.bn(b.conv("input", 3, 64, 7, "conv1", stride=2), 64, "bn1"), "relu1")
    y = b.node("MaxPool", [y], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            prefix = f"layer{stage}.{block}"
            h = b.relu(b.bn(b.conv(y, cin, cout, 3, f"{prefix}.conv1", stride=stride), cout, f"{prefix}.bn1"),
                       f"{prefix}.relu1")
            # the last BN of a block starts small (like zero-init residuals) so the sum stays O(1)
            h = b.bn(b.conv(h, cout, cout, 3, f"{prefix}.conv2"), cout, f"{prefix}.bn2", gamma=(0.2, 0.5))
            shortcut = y
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(y, cin, cout, 1, f"{prefix}.downsample.0", stride=stride), cout,
                                f"{prefix}.downsample.1")
            y = b.relu(b.node("Add", [h, shortcut], f"{prefix}.add"), f"{prefix}.relu2")
            cin = cout
    y = b.node("GlobalAveragePool", [y], "avgpool")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.gemm(y, 512, 1000, "fc")
    return b.model("resnet18", "input", (batch, 3, image, image), y, "logits", (batch, 1000))


# MobileNetV2 (Sandler et al. 2018, table 2): expansion t, output channels c, repeats n, stride s.
MOBILENET_V2_TABLE = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                      (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(batch: int = 1, image: int = 224, seed: int = 0) -> Any:
    """MobileNetV2 (width 1.0): input "input" (batch, 3, image, image) -> "logits" (batch, 1000).

    Stem conv 3x3 stride 2 (32) + BN + relu6; inverted residual blocks per MOBILENET_V2_TABLE:
    1x1 expansion (x6, skipped when t == 1) + BN + relu6, depthwise 3x3 (stride s on the
    first repeat) + BN + relu6, 1x1 linear projection + BN, residual add when stride is 1 and
    the channels match; conv 1x1 1280 + BN + relu6, global average pool, flatten, Gemm 1000.
    relu6 is Clip(min=0, max=6). `image` must be a multiple of 32.
    """
    if image % 32:
        raise ValueError(f"mobilenet_v2: image must be a multiple of 32, got {image}")
    b = _Builder(seed)

    def conv_bn(x: str, cin: int, cout: int, kernel: int, name: str, stride: int = 1, groups: int = 1,
                relu6: bool = True, gamma: tuple[float, float] = (0.5, 1.0)) -> str:
        y = b.bn(b.conv(x, cin, cout, kernel, f"{name}.conv", stride=stride, groups=groups), cout, f"{name}.bn",
                 gamma=gamma)
        return b.relu6(y, f"{name}.relu6") if relu6 else y

    y = conv_bn("input", 3, 32, 3, "features.0", stride=2)
    cin, index = 32, 1
    for t, c, n, s in MOBILENET_V2_TABLE:
        for repeat in range(n):
            stride = s if repeat == 0 else 1
            name = f"features.{index}"
            hidden = cin * t
            h = y if t == 1 else conv_bn(y, cin, hidden, 1, f"{name}.expand")
            h = conv_bn(h, hidden, hidden, 3, f"{name}.depthwise", stride=stride, groups=hidden)
            residual = stride == 1 and cin == c
            h = conv_bn(h, hidden, c, 1, f"{name}.project", relu6=False, gamma=(0.2, 0.5) if residual else (0.5, 1.0))
            y = b.node("Add", [h, y], f"{name}.add") if residual else h
            cin, index = c, index + 1
    y = conv_bn(y, cin, 1280, 1, f"features.{index}")
    y = b.node("GlobalAveragePool", [y], "avgpool")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.gemm(y, 1280, 1000, "classifier")
    return b.model("mobilenet_v2", "input", (batch, 3, image, image), y, "logits", (batch, 1000))


MODELS: dict[str, Callable[..., Any]] = {
    "small_cnn": small_cnn, "mnist_cnn": mnist_cnn, "resnet18": resnet18, "mobilenet_v2": mobilenet_v2}


def save(model: Any, path: str | os.PathLike[str]) -> str:
    """Write `model` to `path` (a .onnx file); returns the path as a string."""
    import onnx

    onnx.save_model(model, os.fspath(path))
    return os.fspath(path)


def main(argv: list[str] | None = None) -> int:
    """`python -m plugnn.synthetic_models NAME OUT.onnx [--batch B] [--image I] [--seed S]`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m plugnn.synthetic_models",
                                     description="write a synthetic ONNX model with seeded random weights")
    parser.add_argument("name", choices=sorted(MODELS))
    parser.add_argument("output", help="the .onnx file to write")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--image", type=int, default=None, help="image size (resnet18, mobilenet_v2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    kwargs: dict[str, Any] = {"seed": args.seed}
    if args.image is not None:
        if args.name not in ("resnet18", "mobilenet_v2"):
            parser.error(f"--image applies to resnet18 and mobilenet_v2, not {args.name}")
        kwargs["image"] = args.image
    save(MODELS[args.name](args.batch, **kwargs), args.output)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
