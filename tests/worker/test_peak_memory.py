"""A job's peak RSS (worker/peak_memory.py): the reset forgets an earlier, bigger peak of the same process,
and the peak sees an allocation made after it (real /proc, real pages)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.services import REPO_ROOT

SCRIPT = """
import numpy as np
from worker.peak_memory import peak_rss_mib, reset_peak_rss
big = np.ones(300 * 2**20 // 8)  # 300 MiB, every page touched
del big
before = peak_rss_mib()
assert reset_peak_rss()
after_reset = peak_rss_mib()
small = np.ones(60 * 2**20 // 8)
print(before, after_reset, peak_rss_mib())
"""


def test_the_peak_is_the_jobs_own() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    before, after_reset, after_small = (float(v) for v in out.stdout.split())
    assert before > after_reset + 250, "the reset forgets the earlier 300 MiB"
    assert after_small > after_reset + 50, "and sees the 60 MiB allocated after it"
