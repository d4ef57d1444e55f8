"""Which way is better, for every metric name the product reports: one rule for `kneeboard check`, budgets, sweep
frontiers and the task-proxy scatter (pure Python, so the client, the API and the engine all import it)."""

from __future__ import annotations

import re

HIGHER_IS_BETTER = re.compile(
    r"(top1_match|topk_agreement|topk_overlap|cosine|sqnr|psnr|snr|sdr|r2|agreement|_accuracy$|^accuracy"
    r"|f1_macro$|f1_macro_vs_golden$|(^|[._])f1_50$|ssim|iou|boundary_f1|exact_match|bleu|chrf|rouge_l|first_divergence|semantic"
    r"|(^|[._])(map|ap)(50|75|_small|_medium|_large)?(_vs_golden)?$|ar100$)"
)
"""Metrics that get worse as they fall (agreement, cosine, SQNR, PSNR, SNR, SI-SDR, SSIM, accuracy, F1, IoU, boundary F1,
exact transcripts, detection mAP / AP / AR, per-image F1@.5, BLEU, chrF, ROUGE-L and the semantic similarity
(embedding cosine) of generated text, and the
position where two generations first differ: later is better); every other metric (KL, JS, MSE, calibration
shift, WER, CER, NLL, perplexity, boxes missed or added...) and every drop (`..._drop...`: accuracy, F1, PSNR,
SSIM, mIoU, mAP) gets worse as it rises. A regression is a move in the worse direction."""


def higher_is_better(key: str) -> bool:
    return "_drop" not in key and HIGHER_IS_BETTER.search(key) is not None
