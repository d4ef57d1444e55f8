"""What a hostile request body costs the API (issue 32): a 35 MB JSON body POSTed with no token to
/api/v1/jobs and /api/v1/auth/login, once with a Content-Length and once chunked (none). For each: seconds
until the first byte of the answer, its status, the slowest /api/v1/health answer while it ran, and how much
the API process's peak RSS grew. A real `kneeboard api` (uvicorn, embedded SQLite) in a child process.

    .venv/bin/python -m bench.bench_hostile_bodies [--megabytes 35]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _hostile(port: int, path: str, size: int, chunked: bool) -> tuple[float, str]:
    """Sends a JSON body of about `size` bytes (an array of zeros); seconds until the answer's first line arrives, and that line."""
    body = b'{"name": [' + b"0," * ((size - 13) // 2) + b"0]}"  # many small values: the costliest parse
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % len(body)
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s\r\n\r\n" % (
        path.encode(),
        framing,
    )
    sock = socket.create_connection(("127.0.0.1", port))
    answer: list[tuple[float, str]] = []
    start = time.perf_counter()

    def read() -> None:
        data = sock.recv(4096)
        answer.append((time.perf_counter() - start, data.split(b"\r\n", 1)[0].decode(errors="replace")))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        sock.sendall(head)
        step = 64 * 1024
        for i in range(0, len(body), step):
            if answer:
                break  # answered already: a real client would stop too
            piece = body[i : i + step]
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked and not answer:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server closed the connection after answering
    reader.join(timeout=120)
    sock.close()
    return answer[0] if answer else (float("nan"), "no answer")


def _health_while(port: int, stop: threading.Event, worst: list[float]) -> None:
    """Probes /health every 50 ms until `stop`: the slowest answer in worst[0], the count in worst[1]."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get("/api/v1/health")
            worst[0] = max(worst[0], time.perf_counter() - start)
            worst[1] += 1
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=float, default=35)
    size = int(parser.parse_args().megabytes * 1_000_000)
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")} | {
            "KNEEBOARD_DATA_DIR": str(Path(tmp) / "data"),
            "KNEEBOARD_PORT": str(port),
            "KNEEBOARD_SEED_DEMO": "false",
        }
        subprocess.run([sys.executable, "-m", "backend.cli", "migrate"], env=env, cwd=REPO, check=True)
        server = subprocess.Popen(
            [sys.executable, "-m", "backend.cli", "api"],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/api/v1/health").raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            print(
                f"{size / 1e6:.0f} MB JSON body, no token; API process peak RSS at start "
                f"{_peak_rss_mib(server.pid):.0f} MiB"
            )
            for path in ("/api/v1/jobs", "/api/v1/auth/login"):
                for chunked in (False, True):
                    stop, worst = threading.Event(), [0.0, 0]
                    prober = threading.Thread(target=_health_while, args=(port, stop, worst))
                    prober.start()
                    seconds, status = _hostile(port, path, size, chunked)
                    stop.set()
                    prober.join()
                    framing = "chunked" if chunked else "length"
                    print(
                        f"{path:<20} {framing:<8} answered in {seconds * 1000:8.1f} ms: {status:<36} "
                        f"slowest of {worst[1]} health {worst[0] * 1000:7.1f} ms   peak RSS {_peak_rss_mib(server.pid):6.0f} MiB"
                    )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
