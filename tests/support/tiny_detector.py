"""A tiny single-scale YOLO-style detector trained in seconds on synthetic pictures, for the detection
task's tests and bench: coloured squares and discs on a noisy dark background, three classes (red square,
red disc, green square), 1 to 3 objects per picture, each in its own cell of the model's grid.

The model ends in the layout Ultralytics exports: ``[N, 4 + C, A]`` with per anchor (one per grid cell) the
box centre x, centre y, width, height in pixels and C sigmoid class scores."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

CLASSES = 3
STRIDE = 8
MAX_OBJECTS = 3


def scenes(n: int, seed: int, size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pictures (n, 3, size, size) float32 in [0, 1], gt_boxes (n, MAX_OBJECTS, 4) xyxy, gt_labels
    (n, MAX_OBJECTS) with −1 padding)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:size, :size] + 0.5
    pics = rng.uniform(0, 0.15, size=(n, 3, size, size)).astype(np.float32)
    boxes = np.zeros((n, MAX_OBJECTS, 4))
    labels = np.full((n, MAX_OBJECTS), -1, dtype=np.int64)
    cells = (size // STRIDE) ** 2
    for i in range(n):
        placed: list[tuple[float, float, float]] = []
        for k in range(int(rng.integers(1, MAX_OBJECTS + 1))):
            for _ in range(50):  # a spot clear of the others and in its own cell
                half = float(rng.uniform(4, 11))
                cx, cy = rng.uniform(half, size - half, size=2)
                cell = int(cy // STRIDE) * (size // STRIDE) + int(cx // STRIDE)
                if all(
                    abs(cx - x) > half + h + 2 or abs(cy - y) > half + h + 2 for x, y, h in placed
                ) and all(
                    cell != int(y // STRIDE) * (size // STRIDE) + int(x // STRIDE) for x, y, _ in placed
                ):
                    break
            else:
                continue
            assert cell < cells
            placed.append((cx, cy, half))
            cls = int(rng.integers(0, CLASSES))
            if cls == 1:
                mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= half**2
            else:
                mask = (np.abs(xx - cx) <= half) & (np.abs(yy - cy) <= half)
            colour = [0.9, 0.1, 0.1] if cls < 2 else [0.1, 0.9, 0.1]
            for ch in range(3):
                pics[i, ch][mask] = colour[ch] + rng.uniform(-0.1, 0.1)
            boxes[i, k] = [cx - half, cy - half, cx + half, cy + half]
            labels[i, k] = cls
    return np.clip(pics, 0, 1), boxes, labels


class TinyYolo(nn.Module):
    """Three stride-2 convolutions to an (size / 8)² grid, a 1×1 head: per cell a box and class scores."""

    grid: torch.Tensor

    def __init__(self, size: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
        )
        self.head = nn.Conv2d(32, 4 + CLASSES, 1)
        g = size // STRIDE
        gy, gx = torch.meshgrid(
            torch.arange(g, dtype=torch.float32), torch.arange(g, dtype=torch.float32), indexing="ij"
        )
        self.register_buffer("grid", torch.stack([gx, gy]).reshape(1, 2, g * g))

    def raw(self, x: torch.Tensor) -> torch.Tensor:
        p = self.head(self.body(x))
        return p.reshape(p.shape[0], p.shape[1], -1)  # (N, 4 + C, cells)

    def decode(self, p: torch.Tensor) -> torch.Tensor:
        centre = (self.grid + torch.sigmoid(p[:, :2])) * STRIDE
        wh = torch.exp(p[:, 2:4].clamp(max=4.0)) * 2 * STRIDE
        return torch.cat([centre, wh, torch.sigmoid(p[:, 4:])], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.raw(x))


def _targets(
    boxes: np.ndarray, labels: np.ndarray, size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per cell: one-hot class (N, C, cells), box targets (N, 4, cells) as the raw outputs should be, mask."""
    g = size // STRIDE
    n = len(labels)
    cls = np.zeros((n, CLASSES, g * g), dtype=np.float32)
    box = np.zeros((n, 4, g * g), dtype=np.float32)
    mask = np.zeros((n, g * g), dtype=bool)
    for i, j in zip(*np.nonzero(labels >= 0), strict=True):
        x1, y1, x2, y2 = boxes[i, j]
        cx, cy, w, h = (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1
        cell = int(cy // STRIDE) * g + int(cx // STRIDE)
        cls[i, labels[i, j], cell] = 1
        box[i, :, cell] = [
            cx / STRIDE % 1,
            cy / STRIDE % 1,
            np.log(w / (2 * STRIDE)),
            np.log(h / (2 * STRIDE)),
        ]
        mask[i, cell] = True
    return torch.from_numpy(cls), torch.from_numpy(box), torch.from_numpy(mask)


def train_tiny_yolo(seed: int = 0, n: int = 1024, epochs: int = 30, size: int = 64) -> TinyYolo:
    """About 13 s on one torch thread (mAP@.5 ≈ 0.8 on fresh scenes at seed 0)."""
    torch.manual_seed(seed)
    pics, boxes, labels = scenes(n, seed, size)
    x = torch.from_numpy(pics)
    cls_t, box_t, mask = _targets(boxes, labels, size)
    model = TinyYolo(size)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        for s in range(0, n, 64):
            p = model.raw(x[s : s + 64])
            m = mask[s : s + 64]
            loss = nn.functional.binary_cross_entropy_with_logits(
                p[:, 4:], cls_t[s : s + 64], reduction="sum"
            ) / max(1, int(m.sum()))
            xy = torch.sigmoid(p[:, :2]).permute(0, 2, 1)[m]
            wh = p[:, 2:4].permute(0, 2, 1)[m]
            t = box_t[s : s + 64].permute(0, 2, 1)[m]
            loss = loss + 5 * (xy - t[:, :2]).abs().mean() + (wh - t[:, 2:]).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()
