"""The fidelity run of bench_llm in a fresh interpreter, so its peak RSS is the run's own (the parent built and
exported the model in torch): what a worker's fidelity job runs for task "language_model" with generation
(worker/jobs/fidelity.py → compare_models on teacher-forced runners, then generation_step.add_generation),
called on the engine directly. Prints one JSON line.

`python -m bench.llm_fidelity_child GOLDEN.onnx COMPRESSED.onnx PROMPTS LENGTH NEW BATCH THREADS`
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def main(argv: list[str]) -> None:
    import numpy as np

    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.loaders.onnx_runner import load_onnx
    from worker.engine.tasks.generation.teacher_forced import teacher_forced
    from worker.engine.tasks.generation.tokenizer import TextDecoder
    from worker.engine.tasks.lm_generation import generation_request, run_generation

    golden_path, compressed_path = Path(argv[0]), Path(argv[1])
    prompts, length, new, batch, threads = (int(a) for a in argv[2:7])
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here: the imports are not the run's
    baseline = _status_kib("VmRSS")
    started = time.perf_counter()
    golden, compressed = load_onnx(golden_path, threads), load_onnx(compressed_path, threads)
    load_s = time.perf_counter() - started
    after_load = _status_kib("VmRSS")
    vocabulary = int(golden.outputs[0].shape[-1])  # type: ignore[arg-type]
    ids = np.random.default_rng(0).integers(0, vocabulary, size=(prompts, length), dtype=np.int64)
    arrays = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    params = FidelityParams(batch_size=batch, task="language_model")
    started = time.perf_counter()
    report = compare_models(teacher_forced(golden), teacher_forced(compressed), arrays, None, params)
    teacher_forced_s = time.perf_counter() - started
    peak_teacher_forced = _status_kib("VmHWM")
    task = next(m["task"] for m in report.outputs.values() if m.get("task") is not None)
    request = generation_request({"generate_tokens": new}, arrays, golden, compressed, TextDecoder(), batch)
    assert request is not None
    started = time.perf_counter()
    block, _ = run_generation(request, golden, compressed)
    generation_s = time.perf_counter() - started
    print(
        json.dumps(
            {
                "baseline_rss_mib": baseline / 1024,
                "after_load_rss_mib": after_load / 1024,
                "peak_rss_mib": _status_kib("VmHWM") / 1024,
                "peak_teacher_forced_mib": peak_teacher_forced / 1024,
                "load_s": load_s,
                "teacher_forced_s": teacher_forced_s,
                "generation_s": generation_s,
                "kl_mean": task["kl_mean"],
                "top1_agreement": task["top1_agreement"],
                "ppl_golden": task["ppl_golden"],
                "ppl_compressed": task["ppl_compressed"],
                "ppl_delta": task["ppl_delta"],
                "exact_match": block.get("exact_match_rate"),
                "first_divergence_median": block["first_divergence"]["median"],
                "bleu_vs_golden": block["bleu_vs_golden"],
                "kv_cache": [block["kv_cache_golden"], block["kv_cache_compressed"]],
                "ms_per_token_golden": block["ms_per_token_golden"],
                "ms_per_token_compressed": block["ms_per_token_compressed"],
                "tokens": [block["tokens_golden"], block["tokens_compressed"]],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
