"""Seed the demo project through the public API: a digits CNN, its int8 version, the digits test set,
and a fidelity job comparing them. Idempotent: does nothing when the project exists.

    python -m worker.demo.seed --api http://127.0.0.1:8000
    python -m worker.demo.seed --write-files demo-files   # only write the files, e.g. for the README's examples
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from backend.client import KneeboardClient

DEMO_PROJECT = "demo"
log = logging.getLogger("kneeboard.demo")


def seed(api_url: str) -> str | None:
    """Returns the fidelity job id, or None when the demo project already existed."""
    from worker.demo.models import write_demo_bundle

    client = KneeboardClient(api_url)
    client.wait_healthy(timeout=120)
    if any(p["name"] == DEMO_PROJECT for p in client.projects()):
        log.info("demo project exists; nothing to seed")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        log.info("training the digits CNN and quantizing it to int8...")
        bundle = write_demo_bundle(Path(tmp))
        project = client.create_project(
            DEMO_PROJECT, "A small CNN trained on scikit-learn's digits, and its int8 (QDQ) version."
        )
        golden = client.upload_model(project["id"], bundle.golden_onnx, name="digits-cnn (fp32, golden)")
        compressed = client.upload_model(project["id"], bundle.int8_onnx, name="digits-cnn (int8 QDQ)")
        dataset = client.upload_dataset(project["id"], bundle.test_npz, name="digits test set (with labels)")
    for model in (golden, compressed):
        client.wait_model(model["id"])
    job = client.create_job(
        project["id"],
        "fidelity",
        {
            "golden_model_id": golden["id"],
            "compressed_model_id": compressed["id"],
            "dataset_id": dataset["id"],
        },
    )
    done = client.wait_job(job["id"])
    log.info("demo fidelity job %s: %s", job["id"], done["status"])
    return str(job["id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--api", default="http://127.0.0.1:8000")
    parser.add_argument("--write-files", type=Path, help="write the demo files into this folder and exit")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.write_files:
        from worker.demo.models import write_demo_bundle

        logging.getLogger().setLevel(logging.WARNING)  # the exporters are chatty
        bundle = write_demo_bundle(args.write_files)
        for path in (bundle.golden_onnx, bundle.int8_onnx, bundle.test_npz, bundle.golden_pt2):
            print(path)
        return
    seed(args.api)


if __name__ == "__main__":
    main()
