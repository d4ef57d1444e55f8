"""Sensitivity scans of real models: the product scan (each cell re-runs only the suffix downstream of its
layer, from the golden prefix) against a naive loop measured in the same run (each layer × config:
compress that layer alone, build an onnxruntime session of the whole model, run every batch), at the
same thread count, with the largest relative difference between the two over every cell and metric.

* EfficientNet-Lite0 (the pretrained weights the tests use) at 224 px, 256 photo crops, weight
  quantization at 8 and 4 bits per layer;
* a ResNet-18-shaped model (21 conv / linear layers, batch-norm folded by the exporter) at 64 px, and its
  whole product scan again in a fresh process for that process's peak RSS (issue 32's goal: 700 MiB);
* a 500-layer residual MLP: a whole scan completes, with its time and the scan process's peak RSS;
* the same scans as jobs with one worker process and with two (embedded stack: SQLite, kombu's
  filesystem broker), as bench_sweep measures its sweep: the ResNet-18 shape (a 12 s job, where each
  worker's fixed costs show) and EfficientNet-Lite0 on every third layer (the real-size one).

`--quick` scans a few layers spread over the depth on fewer samples (for development). The naive loop
always runs on the layers the product scan runs on; without --quick, EfficientNet's naive loop runs on
every third layer to bound the bench's time (the ratio compares the same cells).
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import onnxruntime_run_time, peak_rss_mib, photo_crops, report

CONFIGS = [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}]
METRICS = ("kl_mean", "kl_max", "top1_agreement", "sqnr_db", "mse")
THREADS = 1


# ------------------------------------------------------------------------------------------- models


def _efficientnet(folder: Path, samples: int) -> tuple[Path, np.ndarray]:
    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.demo.models import export_onnx

    images = photo_crops(samples, 224)
    with torch.inference_mode():
        path = export_onnx(efficientnet_lite0().eval(), images[:2], folder / "efficientnet_lite0.onnx")
    return path, images


def _resnet18_shape(folder: Path, samples: int, size: int = 64) -> tuple[Path, np.ndarray]:
    """ResNet-18's layout (BasicBlocks [2, 2, 2, 2], 64..512 channels, 1000 classes), random weights and
    batch-norm statistics; inputs are the photo crops."""
    import torch
    from torch import nn

    from tests.support.residual import BasicBlock
    from worker.demo.models import export_onnx

    torch.manual_seed(0)
    widths = [64, 128, 256, 512]
    blocks: list[nn.Module] = []
    cin = 64
    for i, width in enumerate(widths):
        blocks += [BasicBlock(cin, width, 1 if i == 0 else 2), BasicBlock(width, width, 1)]
        cin = width
    model = nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        *blocks,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(512, 1000),
    )
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_var.uniform_(0.5, 1.5)  # type: ignore[union-attr]
            module.weight.data.uniform_(0.5, 1.5)
    images = photo_crops(samples, size, seed=1)
    with torch.inference_mode():
        path = export_onnx(model.eval(), images[:2], folder / "resnet18_shape.onnx")
    return path, images


def _deep_mlp(folder: Path, samples: int, layers: int = 500, width: int = 32) -> tuple[Path, np.ndarray]:
    """`layers` Linear layers: residual blocks of two (Linear, ReLU, Linear) and a 10-class head."""
    import torch
    from torch import nn

    from worker.demo.models import export_onnx

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 0.1 * self.fc2(torch.relu(self.fc1(x)))

    torch.manual_seed(0)
    model = nn.Sequential(*[Residual() for _ in range((layers - 1) // 2)], nn.Linear(width, 10)).eval()
    x = np.random.default_rng(2).standard_normal((samples, width)).astype(np.float32)
    with torch.inference_mode():
        path = export_onnx(model, x[:2], folder / "deep_mlp.onnx")
    return path, x


# ------------------------------------------------------------------------------------------- scans


def _scan(
    path: Path, x: np.ndarray, layers: list[str] | None, reuse_prefix: bool
) -> tuple[float, Any, float]:
    """(seconds, result, seconds inside onnxruntime's runs) of one scan."""
    from worker.engine.compression import open_compressible
    from worker.engine.sensitivity.scan import layer_sensitivity

    start = time.perf_counter()
    with onnxruntime_run_time() as runtime:
        handle = open_compressible(path, "onnx", intra_op_threads=THREADS)
        result = layer_sensitivity(
            handle, {"input": x}, CONFIGS, layers=layers, reuse_prefix=reuse_prefix
        )  # the default batch (scan_batch_size): 8 on EfficientNet-Lite0, 64 on the ResNet-18 shape
    return time.perf_counter() - start, result, runtime[0]


def _max_relative_difference(a: Any, b: Any) -> float:
    worst = 0.0
    for key, cell in a.cells.items():
        for metric in METRICS:
            x, y = getattr(cell.divergence, metric), getattr(b.cells[key].divergence, metric)
            if x is None or y is None or x == y:
                if (x is None) != (y is None):
                    return float("inf")
                continue
            worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
    return worst


def _layers(path: Path, every: int) -> list[str]:
    from worker.engine.compression import open_compressible

    names = [layer.name for layer in open_compressible(path, "onnx").layers()]
    return names[::every] if every > 1 else names


def _product_vs_naive(name: str, path: Path, x: np.ndarray, every: int) -> None:
    layers = _layers(path, every)
    product, fast, product_runtime = _scan(path, x, layers, reuse_prefix=True)
    naive, full, _ = _scan(path, x, layers, reuse_prefix=False)
    print(f"{name}: {len(layers)} layers x {len(CONFIGS)} configs on {len(x)} inputs, {THREADS} thread")
    report("naive loop (whole model per cell)", naive, "naive", naive)
    report("product scan (suffix from the golden prefix)", product, "naive", naive)
    report("  of which onnxruntime runs", product_runtime, "naive", naive)
    print(f"{'speed-up of the product scan':<46} {naive / product:10.2f}x")
    # the golden pass, the prefix passes and every cell's suffix run are onnxruntime's own work: even with
    # all else free, prefix reuse cannot beat this
    print(f"{'bound (naive / its onnxruntime runs)':<46} {naive / product_runtime:10.2f}x")
    print(f"{'max relative difference over every cell':<46} {_max_relative_difference(fast, full):10.3g}")


def _peak_rss_child(path: str, samples: int, queue: Any) -> None:
    x = np.load(path + ".npy")
    seconds, result, _ = _scan(Path(path), x[:samples], None, reuse_prefix=True)
    queue.put((seconds, len(result.cells), peak_rss_mib()))


def _in_fresh_process(path: Path, x: np.ndarray) -> tuple[float, int, float]:
    """(seconds, cells, peak RSS in MiB) of a whole product scan in a spawned process: the peak is the
    scan's own (with the imports it needs), not this process's."""
    np.save(str(path) + ".npy", x)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_peak_rss_child, args=(str(path), len(x), queue))
    child.start()
    seconds, cells, peak_mib = queue.get()
    child.join()
    return seconds, cells, peak_mib


def _scan_memory(name: str, path: Path, x: np.ndarray) -> None:
    seconds, cells, peak_mib = _in_fresh_process(path, x)
    print(f"{name}: every layer x {len(CONFIGS)} configs on {len(x)} inputs, in a fresh process")
    print(
        f"{'product scan, ' + str(cells) + ' cells':<46} {seconds * 1000:10.1f} ms   peak RSS {peak_mib:.0f} MiB"
    )


def _deep(folder: Path, samples: int, layers: int) -> None:
    path, x = _deep_mlp(folder, samples, layers)
    _scan_memory(f"deep residual MLP: {layers} Linear layers", path, x)


# ------------------------------------------------------------------------------------------- fan-out


def _through_the_queue_job(
    root: Path, model: Path, data: Path, workers: int, kind: str, params: dict[str, Any]
) -> tuple[float, set[str]]:
    """Run one job of `kind` through a fresh embedded stack with `workers` worker processes; returns its
    duration (started to finished, as the job row says) and the worker ids that took its chunks."""
    from backend.client import KneeboardClient
    from backend.db.migrations import upgrade_to_head
    from backend.settings import Settings
    from tests.support.accounts import account_in
    from tests.support.services import start_api, start_worker

    settings = Settings(data_dir=root / f"data-{kind}-{workers}-{model.stem}", seed_demo=False)
    settings.data_dir.mkdir()
    upgrade_to_head(settings.resolved_database_url)
    account = account_in(settings.resolved_database_url, username="bench", team="bench")
    api, base = start_api(settings, root / f"api-{kind}-{workers}-{model.stem}.log")
    procs = [
        start_worker(settings, root / f"worker-{kind}-{workers}-{model.stem}-{i}.log", name=f"w{i}")
        for i in range(workers)
    ]
    try:
        c = KneeboardClient(base, token=account.token)
        project = c.create_project("bench")
        m = c.upload_model(project["id"], model)
        d = c.upload_dataset(project["id"], data)
        assert c.wait_model(m["id"], timeout=300)["status"] == "ready"
        job = c.create_job(project["id"], kind, {"model_id": m["id"], "dataset_id": d["id"]} | params)
        done = c.wait_job(job["id"], timeout=1800)
        assert done["status"] == "succeeded", done["error"]
        chunks = c.http.get(f"/jobs/{job['id']}/chunks").json()
        return float(done["duration_s"]), {ch["worker_id"] for ch in chunks}
    finally:
        for proc in procs:
            proc.stop()
        api.stop()


def _golden_passes_child(path: str, x: np.ndarray, start: Any, queue: Any) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    session.run(None, {"input": x[:32]})  # warm
    start.wait()
    began = time.perf_counter()
    for i in range(0, len(x), 32):
        session.run(None, {"input": x[i : i + 32]})
    queue.put(time.perf_counter() - began)


def _two_process_ceiling(model: Path, x: np.ndarray) -> float:
    """Golden passes over `x` in one process, then in two processes at once: how many times one process's
    work two processes do in the same time (this machine's ceiling for two workers, whatever the job)."""
    context = multiprocessing.get_context("spawn")

    def together(n: int) -> float:
        start, queue = context.Event(), context.Queue()
        children = [
            context.Process(target=_golden_passes_child, args=(str(model), x, start, queue)) for _ in range(n)
        ]
        for child in children:
            child.start()
        time.sleep(2.0)  # both sessions built and warm
        start.set()
        slowest = max(queue.get() for _ in children)
        for child in children:
            child.join()
        return slowest

    alone = min(together(1) for _ in range(2))
    return 2 * alone / min(together(2) for _ in range(2))


def _fan_out(
    root: Path, name: str, model: Path, x: np.ndarray, chunks: int, layers: list[str] | None = None
) -> None:
    """One sensitivity job through the queue with one worker process and with two."""
    data = root / f"calibration-{model.stem}.npz"
    np.savez(data, input=x)
    params: dict[str, Any] = {
        "configs": CONFIGS,
        "max_samples": len(x),
        "whole_model": False,
        "mixed_precision_bits": [],
        "importance_methods": [],
        "threads": 1,
        "chunks": chunks,
        "layers": layers,
    }
    ceiling = _two_process_ceiling(model, x)
    one, _ = _through_the_queue_job(root, model, data, 1, "sensitivity", params)
    two, used = _through_the_queue_job(root, model, data, 2, "sensitivity", params)
    cells = f"{len(layers)} layers" if layers is not None else "every layer"
    print(f"sensitivity job: {name}, {len(x)} inputs, {cells}, {chunks} chunks, 1 thread per worker")
    report("sensitivity job, 1 worker process", one, "1 worker", one)
    report(f"sensitivity job, 2 worker processes ({len(used)} used)", two, "1 worker", one)
    print(f"{'speed-up of 2 workers over 1':<46} {one / two:10.2f}x")
    print(f"{'ceiling: 2 processes of golden passes at once':<46} {ceiling:10.2f}x one process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few layers and samples (development)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["efficientnet", "resnet", "deep", "fanout"])
    args = parser.parse_args()
    quick = args.quick
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if "efficientnet" not in args.skip or "fanout" not in args.skip:
            path, images = _efficientnet(root, 32 if quick else 256)
        if "efficientnet" not in args.skip:
            _product_vs_naive("EfficientNet-Lite0 at 224 px", path, images, every=12 if quick else 3)
        resnet, inputs = _resnet18_shape(root, 64 if quick else 256)
        if "resnet" not in args.skip:
            _product_vs_naive("ResNet-18 shape at 64 px", resnet, inputs, every=5 if quick else 1)
            _scan_memory("ResNet-18 shape at 64 px", resnet, inputs)
        if "deep" not in args.skip:
            _deep(root, 64, 50 if quick else 500)
        if "fanout" not in args.skip:
            _fan_out(root, "ResNet-18 shape at 64 px", resnet, inputs, chunks=4 if quick else 8)
            every = 12 if quick else 3
            _fan_out(root, "EfficientNet-Lite0 at 224 px", path, images, 8, _layers(path, every))


if __name__ == "__main__":
    main()
