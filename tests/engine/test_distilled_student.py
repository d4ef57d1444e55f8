"""A distilled student of a different architecture against its teacher (issue 14): an MLP distilled here from
the trained digits CNN. The output-level report works (checked against scipy on onnxruntime's own logits);
the per-layer profile says why it does not apply, and does not say so for the CNN's own int8 version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from torch import nn

from worker.demo.models import DigitsSplit, export_onnx, quantize_onnx_int8
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.layer_profile import profile_layers
from worker.engine.loaders import load_model

DOES_NOT_APPLY = "The per-layer profile does not apply"


def _distil_mlp(teacher: nn.Module, x: np.ndarray, steps: int = 400) -> nn.Module:
    """A 64-32-10 MLP trained on the teacher's soft targets (T = 2, KL), no labels: what a distillation
    into a smaller design gives."""
    torch.manual_seed(0)
    student = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    inputs = torch.from_numpy(x)
    with torch.no_grad():
        soft = torch.log_softmax(teacher(inputs) / 2.0, dim=1)
    optimiser = torch.optim.Adam(student.parameters(), lr=1e-2)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = nn.functional.kl_div(
            torch.log_softmax(student(inputs) / 2.0, dim=1), soft, log_target=True, reduction="batchmean"
        )
        loss.backward()
        optimiser.step()
    return student.eval()


@pytest.fixture(scope="module")
def teacher_student(
    digits_cnn: nn.Module, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("student")
    student = _distil_mlp(digits_cnn, digits_split.x_train)
    x = digits_split.x_test[:2]
    teacher_path = export_onnx(digits_cnn, x, folder / "teacher.onnx")
    return teacher_path, export_onnx(student, x, folder / "student.onnx")


def _logits(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0])


def test_output_report_of_a_distilled_student_matches_scipy(
    teacher_student: tuple[Path, Path], digits_split: DigitsSplit
) -> None:
    teacher, student = teacher_student
    x, y = digits_split.x_test, digits_split.y_test
    report = compare_models(
        load_model(teacher, "onnx"), load_model(student, "onnx"), {"input": x}, y, FidelityParams()
    )
    out = report.outputs["logits"]
    g, c = _logits(teacher, x), _logits(student, x)
    kl = scipy_entropy(softmax(g.astype(np.float64), axis=1), softmax(c.astype(np.float64), axis=1), axis=1)
    assert out["kl_mean_nats"] == pytest.approx(float(kl.mean()), rel=1e-6, abs=1e-9)
    assert out["top1_match"] == pytest.approx(float((g.argmax(1) == c.argmax(1)).mean()), abs=1e-12)
    # A distilled student, not noise: it agrees with its teacher on most digits.
    assert out["top1_match"] > 0.85


def test_profile_says_why_it_does_not_apply_to_another_architecture(
    teacher_student: tuple[Path, Path], digits_split: DigitsSplit
) -> None:
    teacher, student = teacher_student
    profile = profile_layers(teacher, "onnx", student, "onnx", [{"input": digits_split.x_test[:32]}])
    assert [layer.name for layer in profile.layers] == ["logits"]  # the output, same name and shape
    why = profile.not_applicable
    assert why is not None and why.startswith(DOES_NOT_APPLY), profile.notes
    assert "different architectures" in why and "layer_name_map" in why
    assert profile.to_dict()["not_applicable"] == why
    assert profile.unmatched_golden  # the CNN's convolutions


def test_profile_of_a_compressed_copy_has_no_such_note(
    teacher_student: tuple[Path, Path], digits_split: DigitsSplit, tmp_path: Path
) -> None:
    teacher, _ = teacher_student
    int8 = quantize_onnx_int8(teacher, tmp_path / "int8.onnx", digits_split.x_train[:64])
    profile = profile_layers(teacher, "onnx", int8, "onnx", [{"input": digits_split.x_test[:32]}])
    assert len(profile.layers) > 1
    assert profile.not_applicable is None
