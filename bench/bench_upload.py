"""Upload path cost: a model upload over loopback HTTP to the real API in a uvicorn process (multipart,
spooled, streamed to the store while hashed, structure-checked, content-addressed, rows committed, job
enqueued) against copying the same file with sha256 in-process.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from bench.common import best_of, report


def main(size_mb: int = 64) -> None:
    import httpx

    from backend.db.migrations import upgrade_to_head
    from backend.settings import Settings
    from tests.support.accounts import account_in
    from tests.support.services import start_api

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = Settings(data_dir=root / "data", max_upload_bytes=(size_mb + 1) * 1024**2, seed_demo=False)
        settings.data_dir.mkdir()
        upgrade_to_head(settings.resolved_database_url)
        # The framing of an ONNX ModelProto (ir_version, graph, opset_import) around a large random field.
        payload = root / "big.onnx"
        body = os.urandom(size_mb * 1024**2)
        graph = b"\x52" + _varint(len(body)) + body  # GraphProto.doc_string
        with payload.open("wb") as f:
            f.write(b"\x08\x08" + b"\x3a" + _varint(len(graph)) + graph + b"\x42\x02\x10\x11")

        def copy_and_hash() -> None:
            digest = hashlib.sha256()
            with payload.open("rb") as src, (root / "copy").open("wb") as dst:
                while chunk := src.read(1024 * 1024):
                    digest.update(chunk)
                    dst.write(chunk)

        api, base = start_api(settings, root / "api.log")  # a real uvicorn process on loopback
        account = account_in(settings.resolved_database_url, username="bench", team="bench")
        with httpx.Client(base_url=base, timeout=120, headers=account.headers) as client:
            project = client.post("/api/v1/projects", json={"name": "bench"}).json()
            counter = iter(range(1_000_000))

            def upload() -> None:
                # Distinct bytes each time so content addressing cannot skip the write.
                with payload.open("r+b") as f:
                    f.seek(64)
                    f.write(next(counter).to_bytes(4, "little"))
                with payload.open("rb") as f:
                    r = client.post(
                        f"/api/v1/projects/{project['id']}/models", files={"file": ("big.onnx", f)}
                    )
                assert r.status_code == 201, r.text

            copy_seconds = best_of(copy_and_hash, repeats=3)
            print(f"upload: a {size_mb} MiB model file")
            report("copy + sha256 in-process", copy_seconds, "baseline", copy_seconds)
            report(
                "POST /projects/{id}/models (uvicorn, stored)",
                best_of(upload, repeats=3),
                "baseline",
                copy_seconds,
            )
        api.stop()
        shutil.rmtree(root, ignore_errors=True)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


if __name__ == "__main__":
    main()
