"""The speech (CTC) task (worker/engine/tasks/ctc.py, issue 30): a tiny 1-D convolutional CTC model trained
in the test on synthetic utterances (each symbol of a short transcript held for a few noisy one-hot feature
frames, silences between), exported to ONNX with a copy whose weights are rounded to 4 bits, compared by
`compare_models` with task "ctc". Decoding is checked against a plain Python best-path decoder and every
WER / CER and edit count against jiwer called here on the decoded strings. The reference transcripts travel
as a fixed-width unicode array inside an .npz read the way the worker reads datasets (memory-mapped)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jiwer
import numpy as np
import pytest
import torch

from dataset_readers.npz.mapped import load_npz_mapped
from kneeboard_client.thresholds import Limit, check_limit, higher_is_better, output_metrics
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.formats.exporters import export_onnx
from worker.engine.loaders.onnx_runner import OnnxRunner, load_onnx
from worker.engine.tasks.ctc import greedy_decode, to_text
from worker.engine.types import TensorSpec

VOCAB = ["<blank>", "|", "a", "b", "c", "d", "e"]
FRAMES = 48
FEATURES = len(VOCAB) - 1


def _utterances(n: int, seed: int, noise: float = 0.25) -> tuple[np.ndarray, list[str], list[list[int]]]:
    """(features (n, FRAMES, FEATURES) float32, transcripts, token-id targets)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, FRAMES, FEATURES), dtype=np.float32)
    texts, targets = [], []
    for i in range(n):
        words = []
        for _ in range(int(rng.integers(2, 4))):
            letters = [str(rng.choice(list("abcde")))]
            while len(letters) < int(rng.integers(1, 4)):
                letters.append(str(rng.choice([ch for ch in "abcde" if ch != letters[-1]])))
            words.append("".join(letters))
        texts.append(" ".join(words))
        ids = [VOCAB.index(s) for s in "|".join(words)]
        targets.append(ids)
        t = int(rng.integers(0, 3))
        for token in ids:
            hold = int(rng.integers(2, 4))
            x[i, t : t + hold, token - 1] = 1.0
            t += hold + int(rng.random() < 0.3)
    x += rng.normal(0, noise, x.shape).astype(np.float32)
    return x, texts, targets


class CtcNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(FEATURES, 32, 5, padding=2)
        self.conv2 = torch.nn.Conv1d(32, 32, 5, padding=2)
        self.head = torch.nn.Conv1d(32, len(VOCAB), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, T, F) -> (N, T, V)
        h = torch.relu(self.conv2(torch.relu(self.conv1(x.transpose(1, 2)))))
        return self.head(h).transpose(1, 2)


@pytest.fixture(scope="module")
def onnx_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[OnnxRunner, OnnxRunner]:
    torch.manual_seed(0)
    features, _, targets = _utterances(512, seed=1)
    x = torch.from_numpy(features)
    flat = torch.tensor([t for ids in targets for t in ids])
    lengths = torch.tensor([len(ids) for ids in targets])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    model = CtcNet()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    ctc = torch.nn.CTCLoss(blank=0)
    for epoch in range(25):
        if epoch == 15:  # past CTC's all-blank plateau: a smaller step settles the alignments
            optimiser.param_groups[0]["lr"] = 2e-3
        for start in range(0, len(x), 32):
            stop = min(start + 32, len(x))
            log_probs = model(x[start:stop]).log_softmax(-1).transpose(0, 1)
            loss = ctc(
                log_probs,
                flat[offsets[start] : offsets[stop]],
                torch.full((stop - start,), FRAMES, dtype=torch.long),
                lengths[start:stop],
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    compressed = compress_module(model.eval(), {n: WeightQuant(4) for n in ("conv1", "conv2", "head")})[0]
    folder: Path = tmp_path_factory.mktemp("ctc")
    g = export_onnx(model.eval(), features[:2], folder / "golden.onnx", "features", "logits")
    c = export_onnx(compressed.eval(), features[:2], folder / "compressed.onnx", "features", "logits")
    return load_onnx(g, 1), load_onnx(c, 1)


def _plain_decode(logits: np.ndarray) -> list[str]:
    """Best-path decoding written out: arg-max per frame, skip a repeat of the previous frame, skip blanks."""
    texts = []
    for utterance in logits:
        out, previous = [], None
        for frame in utterance:
            token = int(np.argmax(frame))
            if token != previous and token != 0:
                out.append(VOCAB[token])
            previous = token
        texts.append(" ".join("".join(out).replace("|", " ").split()))
    return texts


def _options(**more: object) -> dict[str, object]:
    return {"vocabulary": VOCAB, **more}


def test_wer_and_cer_match_jiwer_on_the_decoded_transcripts(
    onnx_models: tuple[OnnxRunner, OnnxRunner], tmp_path: Path
) -> None:
    golden, compressed = onnx_models
    features, texts, _ = _utterances(60, seed=2)
    np.savez(tmp_path / "speech.npz", features=features, transcripts=np.array(texts))
    dataset = load_npz_mapped(tmp_path / "speech.npz", tmp_path / "cache")
    assert dataset["transcripts"].dtype.kind == "U"  # memory-mapped text, as the worker reads it
    params = FidelityParams(batch_size=16, task="ctc", task_options=_options())
    report = compare_models(golden, compressed, dataset, None, params)
    g = _plain_decode(golden.run({"features": features})["logits"])
    c = _plain_decode(compressed.run({"features": features})["logits"])
    task = report.summary_dict()["outputs"]["logits"]["task"]
    assert (task["name"], task["output"], task["vocabulary_size"], task["word_delimiter"]) == (
        "ctc",
        "logits",
        7,
        "|",
    )

    for which, hyps in (("golden", g), ("compressed", c)):
        words, chars = jiwer.process_words(texts, hyps), jiwer.process_characters(texts, hyps)
        scores = task["against_transcripts"][which]
        assert scores["wer"] == pytest.approx(jiwer.wer(texts, hyps), abs=1e-12)
        assert scores["cer"] == pytest.approx(jiwer.cer(texts, hyps), abs=1e-12)
        counts = (scores["substitutions"], scores["deletions"], scores["insertions"], scores["hits"])
        assert counts == (words.substitutions, words.deletions, words.insertions, words.hits)
        char_counts = (scores["char_substitutions"], scores["char_deletions"], scores["char_insertions"])
        assert char_counts == (chars.substitutions, chars.deletions, chars.insertions)
        assert scores["n_reference_words"] == sum(len(t.split()) for t in texts)
        assert scores["exact_match"] == pytest.approx(
            np.mean([r == h for r, h in zip(texts, hyps, strict=True)])
        )
    assert task["wer_delta"] == pytest.approx(jiwer.wer(texts, c) - jiwer.wer(texts, g), abs=1e-12)
    assert task["cer_delta"] == pytest.approx(jiwer.cer(texts, c) - jiwer.cer(texts, g), abs=1e-12)
    # The trained model transcribes (mostly right). 4-bit weights changed 2 of 148 words here (+0.0135); the
    # sign of so small a delta is not asserted, only that the copy transcribes differently (below).
    assert jiwer.wer(texts, g) < 0.2

    # Label-free: the compressed transcripts against the golden ones.
    assert task["wer_vs_golden"] == pytest.approx(jiwer.wer(g, c), abs=1e-12)
    assert task["cer_vs_golden"] == pytest.approx(jiwer.cer(g, c), abs=1e-12)
    assert 0 < task["wer_vs_golden"] < 1  # the copy mis-transcribes some words: the checks can fail

    # Per utterance, in sample order.
    per_sample = report.task_per_sample
    assert np.allclose(per_sample["wer_vs_golden"], [jiwer.wer(a, b) for a, b in zip(g, c, strict=True)])
    assert np.allclose(per_sample["cer_vs_golden"], [jiwer.cer(a, b) for a, b in zip(g, c, strict=True)])
    assert np.allclose(per_sample["wer_golden"], [jiwer.wer(r, h) for r, h in zip(texts, g, strict=True)])
    assert np.allclose(per_sample["wer_compressed"], [jiwer.wer(r, h) for r, h in zip(texts, c, strict=True)])

    # The inspector's transcripts: the plain decoder's, sample by sample, with the references.
    views = report.task_samples
    assert views is not None and views["task"] == "ctc" and views["n_samples"] == len(texts)
    assert [(v["golden"], v["compressed"], v["reference"]) for v in views["samples"]] == list(
        zip(g, c, texts, strict=True)
    )

    # kneeboard check: WER and its delta get worse as they rise.
    _, metrics = output_metrics(report.summary_dict(), None)
    assert not check_limit(metrics, Limit("wer_delta", "max", task["wer_delta"] - 0.001)).passed
    assert check_limit(metrics, Limit("wer_delta", "max", task["wer_delta"] + 0.001)).passed
    assert not higher_is_better("task.wer_delta") and not higher_is_better("task.cer_vs_golden")
    assert higher_is_better("task.exact_match_vs_golden")


def test_greedy_decoding_matches_the_plain_decoder_on_random_frames() -> None:
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((50, 30, len(VOCAB)))
    logits[:, ::3, 0] += 2.0  # blanks between some repeats, so "a a" and "aa" both occur
    ids = logits.argmax(-1)
    ours = [to_text(t, VOCAB, "|") for t in greedy_decode(ids, 0)]
    assert ours == _plain_decode(logits)
    assert to_text([2, 1, 1, 3], VOCAB, "|") == "a b"  # delimiters collapse to one space
    assert greedy_decode(np.array([[2, 2, 0, 2, 3, 3, 0]]), 0) == [[2, 2, 3]]


def test_without_transcripts_only_the_label_free_scores_and_a_space_delimiter(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, _ = onnx_models
    features, _, _ = _utterances(10, seed=3)
    vocab = [" " if t == "|" else t for t in VOCAB]
    params = FidelityParams(task="ctc", task_options={"vocabulary": vocab, "blank": 0})
    report = compare_models(golden, golden, {"features": features}, None, params)
    task = report.outputs["logits"]["task"]
    assert task["word_delimiter"] == " " and task["against_transcripts"] is None and task["wer_delta"] is None
    assert (task["wer_vs_golden"], task["cer_vs_golden"], task["exact_match_vs_golden"]) == (0.0, 0.0, 1.0)


def test_a_short_vocabulary_bad_transcripts_and_unknown_options_are_refused(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, compressed = onnx_models
    features, texts, _ = _utterances(6, seed=4)

    def run(data: dict[str, np.ndarray], **options: object) -> None:
        compare_models(golden, compressed, data, None, FidelityParams(task="ctc", task_options=options))

    with pytest.raises(
        OutputMismatchError, match="vocabulary has 6 tokens but output 'logits' scores 7 tokens"
    ):
        run({"features": features}, vocabulary=VOCAB[:-1])
    with pytest.raises(OutputMismatchError, match="needs task option 'vocabulary'"):
        run({"features": features})
    with pytest.raises(OutputMismatchError, match="no option 'alphabet'; its options are output, vocabulary"):
        run({"features": features}, vocabulary=VOCAB, alphabet="abc")
    with pytest.raises(OutputMismatchError, match="'blank' must be a token id from 0 to 6"):
        run({"features": features}, vocabulary=VOCAB, blank=7)
    with pytest.raises(DatasetMismatchError, match="'transcripts' must hold strings"):
        run({"features": features, "transcripts": np.arange(6)}, vocabulary=VOCAB)
    with pytest.raises(DatasetMismatchError, match=r"'transcripts' has shape \(6, 1\)"):
        run({"features": features, "transcripts": np.array(texts)[:, None]}, vocabulary=VOCAB)

    class Pooled:
        def __init__(self) -> None:
            self.inputs = golden.inputs
            self.outputs = [TensorSpec("logits", ("batch", len(VOCAB)), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {"logits": golden.run(feeds)["logits"].mean(axis=1)}

    with pytest.raises(OutputMismatchError, match=r"found no output of frame logits \(T, V\)"):
        compare_models(
            Pooled(),
            Pooled(),
            {"features": features},
            None,
            FidelityParams(task="ctc", task_options=_options()),
        )
