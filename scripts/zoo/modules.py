"""The zoo's own small PyTorch modules (the architectures torchvision and transformers do not ship).

Each is a plain, commonly seen pattern, kept small: a U-Net (ConvTranspose or bilinear upsampling),
a YOLO-style detector (CSP backbone with SiLU, nearest upsampling neck, grid-decoding head),
recurrent sequence models (LSTM, GRU, RNN, an embedding + LSTM text classifier), a 1-D audio
convolution net and an MLP with LayerNorm and GELU. Only export.py imports this (torch is never
needed at test time).
"""

from __future__ import annotations

import torch
from torch import nn

# ---- U-Net --------------------------------------------------------------------------------------


class DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Up(nn.Module):
    """Upsample x2 (ConvTranspose2d k2 s2, or bilinear Upsample + 1x1 conv), concat the skip, DoubleConv."""

    def __init__(self, cin: int, cout: int, bilinear: bool) -> None:
        super().__init__()
        if bilinear:
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                                    nn.Conv2d(cin, cin // 2, 1))
        else:
            self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(nn.Module):
    """Four 2x2 max-pool downsamplings (input sides divisible by 16), channels base..16*base."""

    def __init__(self, in_channels: int = 3, classes: int = 2, base: int = 16, bilinear: bool = False) -> None:
        super().__init__()
        c = [base * 2 ** i for i in range(5)]
        self.inc = DoubleConv(in_channels, c[0])
        self.downs = nn.ModuleList(nn.Sequential(nn.MaxPool2d(2), DoubleConv(c[i], c[i + 1])) for i in range(4))
        self.ups = nn.ModuleList(Up(c[i + 1], c[i], bilinear) for i in reversed(range(4)))
        self.head = nn.Conv2d(c[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)


# ---- YOLO-style detector ------------------------------------------------------------------------


class ConvBnSiLU(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1) -> None:
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class CSPBlock(nn.Module):
    """YOLOv8's C2f in small: split the channels in two (chunk -> Split), run bottlenecks on one half."""

    def __init__(self, channels: int, n: int = 1) -> None:
        super().__init__()
        half = channels // 2
        self.cv1 = ConvBnSiLU(channels, channels)
        self.blocks = nn.ModuleList(nn.Sequential(ConvBnSiLU(half, half, 3), ConvBnSiLU(half, half, 3))
                                    for _ in range(n))
        self.cv2 = ConvBnSiLU((2 + n) * half, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(self.cv1(x).chunk(2, dim=1))
        for block in self.blocks:
            parts.append(parts[-1] + block(parts[-1]))
        return self.cv2(torch.cat(parts, dim=1))


class SPPF(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.cv1 = ConvBnSiLU(channels, channels // 2)
        self.pool = nn.MaxPool2d(5, stride=1, padding=2)
        self.cv2 = ConvBnSiLU(channels * 2, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], dim=1))


class Detect(nn.Module):
    """YOLOv5's Detect head: per level a 1x1 conv to anchors*(5+classes), reshape/permute, sigmoid,
    split into xy / wh / confidences, decode against a grid built from the feature map's size."""

    def __init__(self, classes: int, channels: tuple[int, ...], strides: tuple[int, ...],
                 anchors: tuple[tuple[float, ...], ...]) -> None:
        super().__init__()
        self.classes = classes
        self.outputs = classes + 5
        self.anchors_per_level = len(anchors[0]) // 2
        self.strides = strides
        self.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32).view(len(anchors), -1, 2))
        self.convs = nn.ModuleList(nn.Conv2d(c, self.outputs * self.anchors_per_level, 1) for c in channels)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        decoded = []
        na, no = self.anchors_per_level, self.outputs
        for i, (conv, x) in enumerate(zip(self.convs, features)):
            x = conv(x)
            bs, _, ny, nx = x.shape
            x = x.view(bs, na, no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32), torch.arange(nx, dtype=torch.float32),
                                    indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2) - 0.5
            anchor_grid = (self.anchors[i] * self.strides[i]).view(1, na, 1, 1, 2)
            xy, wh, conf = x.sigmoid().split((2, 2, self.classes + 1), dim=4)
            xy = (xy * 2 + grid) * self.strides[i]
            wh = (wh * 2) ** 2 * anchor_grid
            decoded.append(torch.cat((xy, wh, conf), 4).view(bs, na * ny * nx, no))
        return torch.cat(decoded, 1)


class TinyYolo(nn.Module):
    """Backbone (strides 2..32, CSP blocks, SPPF), a top-down neck (nearest upsampling x2 + concat),
    and the Detect head on strides 8, 16 and 32. Input sides divisible by 32."""

    def __init__(self, classes: int = 80, width: int = 16) -> None:
        super().__init__()
        w = [width * 2 ** i for i in range(5)]  # 16, 32, 64, 128, 256
        self.stem = nn.Sequential(ConvBnSiLU(3, w[0], 3, 2), ConvBnSiLU(w[0], w[1], 3, 2), CSPBlock(w[1]))
        self.p3 = nn.Sequential(ConvBnSiLU(w[1], w[2], 3, 2), CSPBlock(w[2], 2))
        self.p4 = nn.Sequential(ConvBnSiLU(w[2], w[3], 3, 2), CSPBlock(w[3], 2))
        self.p5 = nn.Sequential(ConvBnSiLU(w[3], w[4], 3, 2), CSPBlock(w[4]), SPPF(w[4]))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n4 = nn.Sequential(ConvBnSiLU(w[4] + w[3], w[3]), CSPBlock(w[3]))
        self.n3 = nn.Sequential(ConvBnSiLU(w[3] + w[2], w[2]), CSPBlock(w[2]))
        anchors = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
        # YOLOv5 stores anchors in stride units
        scaled = tuple(tuple(a / s for a in level) for level, s in zip(anchors, (8, 16, 32)))
        self.detect = Detect(classes, (w[2], w[3], w[4]), (8, 16, 32), scaled)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c3 = self.p3(self.stem(x))
        c4 = self.p4(c3)
        c5 = self.p5(c4)
        n4 = self.n4(torch.cat([self.up(c5), c4], 1))
        n3 = self.n3(torch.cat([self.up(n4), c3], 1))
        return self.detect([n3, n4, c5])


# ---- sequence models ----------------------------------------------------------------------------


class RecurrentTagger(nn.Module):
    """A recurrent layer over feature frames and a Linear head on every step (batch_first) or on the
    last step (sequence first)."""

    def __init__(self, kind: str, features: int = 40, hidden: int = 64, layers: int = 2,
                 bidirectional: bool = False, batch_first: bool = True, classes: int = 10,
                 last_step_only: bool = False) -> None:
        super().__init__()
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
        self.rnn = cls(features, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)
        self.batch_first = batch_first
        self.last_step_only = last_step_only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x)
        if self.last_step_only:
            y = y[:, -1] if self.batch_first else y[-1]
        return self.head(y)


class TextLSTM(nn.Module):
    """Token ids -> Embedding -> LSTM -> the last layer's final hidden state -> Linear."""

    def __init__(self, vocab: int = 1000, dim: int = 64, hidden: int = 64, classes: int = 4) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.lstm(self.embedding(ids))
        return self.head(h[-1])


# ---- audio --------------------------------------------------------------------------------------


class AudioConv1d(nn.Module):
    """M5 (Dai et al., 2017) for 16 kHz waveforms: Conv1d/BatchNorm1d/ReLU/MaxPool1d x4, global
    average pool (AdaptiveAvgPool1d(1)), Linear."""

    def __init__(self, classes: int = 35, channels: int = 32) -> None:
        super().__init__()

        def block(cin: int, cout: int, k: int, s: int = 1) -> nn.Sequential:
            return nn.Sequential(nn.Conv1d(cin, cout, k, stride=s), nn.BatchNorm1d(cout), nn.ReLU(), nn.MaxPool1d(4))

        self.features = nn.Sequential(block(1, channels, 80, 16), block(channels, channels, 3),
                                      block(channels, 2 * channels, 3), block(2 * channels, 2 * channels, 3))
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))


# ---- MLP ----------------------------------------------------------------------------------------


class LayerNormMLP(nn.Module):
    def __init__(self, features: int = 128, hidden: int = 256, classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.LayerNorm(hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.GELU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Outputs(nn.Module):
    """Wraps a model whose forward returns a dict or a ModelOutput: returns the named entries as a
    tuple. With `arg_names`, the positional inputs are passed to the model as those keywords."""

    def __init__(self, model: nn.Module, keys: tuple[str, ...], arg_names: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.model = model
        self.keys = keys
        self.arg_names = arg_names

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.arg_names:
            out = self.model(**dict(zip(self.arg_names, args, strict=True)))
        else:
            out = self.model(*args)
        return tuple(out[k] for k in self.keys)


__all__ = ["UNet", "TinyYolo", "RecurrentTagger", "TextLSTM", "AudioConv1d", "LayerNormMLP", "Outputs"]
