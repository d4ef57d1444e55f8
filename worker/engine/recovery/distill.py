"""Training-based recovery: distillation fine-tuning (Hinton et al. 2015) of the compressed student against
the golden teacher, and quantization-aware training (the same loop with the weights fake-quantized through a
straight-through estimator, see fake_quant).

Loss per batch: (1 − α)·T²·KL(softmax(t/T) ‖ softmax(s/T)) + α·CE(s, labels), the KL averaged over samples
(the T² keeps the gradient's scale independent of T); α only counts where the calibration split has labels.
Logits are the model's (first) output with the last axis as classes.

What trains, so that the plan still compresses the result to the model that was trained:
- `distill`: every float parameter the plan leaves float (biases, uncompressed layers), and the surviving
  weights of pruned layers without an integer grid, under the pruning mask (`pruning_mask`: the pruned ones
  stay exactly zero). The weights of the other compressed layers are frozen (low-rank factors: training the
  dense product would undo the factorization); where the plan gives them an integer grid they are first
  replaced by their quantized values (fixed points of the plan's quantizer), so the student trains as it will
  run.
- `qat`: the same plus the grid layers' weights, fake-quantized with the STE at every step; at the end they
  are left as their quantized values, so the stored weights lie exactly on the grid. A grid layer that is
  also pruned (prune → quantize) trains under its mask too.

Early stopping: a seeded share of the calibration data (`validation_fraction`) is held out of training; its
KL at T = 1 (the fidelity report's KL) is measured every `eval_every` steps, the best state is kept and
restored, and training stops after `patience` measurements without improvement (0: never early).
Deterministic on CPU for a given seed (batch order from a seeded generator, Adam).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from worker.engine.compression import Config, WeightQuant
from worker.engine.compression.model import Feeds
from worker.engine.recovery import fake_quant
from worker.engine.recovery.common import Layer, RecoveryError, grid_of, linear_layers, weight_quant_of
from worker.engine.recovery.pruning_mask import PruningMasks, prunes


@dataclass(frozen=True)
class TrainingParams:
    steps: int = 300
    """Adam steps (one batch each); 300 fit well under a minute on one CPU core for the digits CNN."""
    learning_rate: float = 1e-3
    temperature: float = 2.0
    batch_size: int = 64
    alpha: float = 0.0
    """Weight of the cross-entropy on labels (used only when the calibration split has labels)."""
    eval_every: int = 20
    patience: int = 5
    """Held-out measurements without improvement before stopping; 0 never stops early."""
    validation_fraction: float = 0.2
    """Share of the calibration data kept out of training for the held-out KL."""
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "steps": 1 <= self.steps <= 1_000_000,
            "learning_rate": 0 < self.learning_rate <= 1,
            "temperature": 0.1 <= self.temperature <= 100,
            "batch_size": 1 <= self.batch_size <= 65_536,
            "alpha": 0 <= self.alpha <= 1,
            "eval_every": 1 <= self.eval_every <= 1_000_000,
            "patience": 0 <= self.patience <= 10_000,
            "validation_fraction": 0.05 <= self.validation_fraction <= 0.5,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise RecoveryError(f"training parameters out of range: {bad} ({self})")


@dataclass(frozen=True)
class TrainingStep:
    step: int
    """Steps done (1-based)."""
    total: int
    loss: float
    heldout_kl: float | None
    """KL(teacher ‖ student) at T = 1 on the validation share, when measured at this step."""


OnStep = Callable[[TrainingStep], None]
"""Called after every step; may raise JobCancelled (training then stops before the next step)."""


@dataclass
class TrainingResult:
    curve: list[dict[str, float | int | None]] = field(default_factory=list)
    """One point per step: {"step", "loss", "heldout_kl"} (heldout_kl null between measurements)."""
    steps_run: int = 0
    best_step: int = 0
    """The step whose state was kept (0: the starting state measured best)."""
    start_heldout_kl: float | None = None
    """The held-out KL before the first step."""
    best_heldout_kl: float | None = None
    stopped_early: bool = False
    trained: list[str] = field(default_factory=list)
    """Parameters trained."""
    quantized: list[str] = field(default_factory=list)
    """Layers whose weights are on the plan's grid (frozen for distill, fake-quantized for qat)."""
    masked: list[str] = field(default_factory=list)
    """Pruned layers whose surviving weights trained under the pruning mask."""
    n_train: int = 0
    n_validation: int = 0
    labelled: bool = False
    notes: list[str] = field(default_factory=list)


def temperature_kl(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """T²·mean over samples of Σ_c p_c (log p_c − log q_c), p = softmax(teacher/T), q = softmax(student/T)."""
    log_q = F.log_softmax(student / temperature, dim=-1)
    log_p = F.log_softmax(teacher / temperature, dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(dim=-1).mean()
    return kl * temperature**2


def _logits(output: object) -> torch.Tensor:
    while isinstance(output, tuple | list | dict):
        output = next(iter(output.values())) if isinstance(output, dict) else output[0]
    if not isinstance(output, torch.Tensor) or not output.is_floating_point() or output.dim() < 1:
        raise RecoveryError("distillation needs a model whose (first) output is a float tensor of logits")
    return output.reshape(-1, output.shape[-1]) if output.dim() > 1 else output.reshape(1, -1)


def _forward(module: nn.Module, feeds: Mapping[str, np.ndarray], index: np.ndarray) -> torch.Tensor:
    return _logits(module(*[torch.from_numpy(np.ascontiguousarray(a[index])) for a in feeds.values()]))


def _outputs(
    module: nn.Module, feeds: Mapping[str, np.ndarray], index: np.ndarray, size: int
) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([_forward(module, feeds, index[i : i + size]) for i in range(0, len(index), size)])


def _weight_parameter(parameters: Mapping[str, nn.Parameter], layer: str) -> str:
    """The layer's weight parameter: `weight`, or the original under a fake-quant parametrization."""
    parametrized = f"{layer}.parametrizations.weight.original"
    return parametrized if parametrized in parameters else f"{layer}.weight"


def grid_layers(
    recovered: nn.Module, plan: Mapping[str, Config], order: Sequence[str]
) -> dict[str, tuple[Layer, WeightQuant]]:
    """The compressed Conv/Linear layers whose final weights lie on an integer grid, with that grid."""
    found: dict[str, tuple[Layer, WeightQuant]] = {}
    for name, module in linear_layers(recovered, [n for n in order if n in plan]).items():
        wq = weight_quant_of(plan[name])
        if wq is not None:
            found[name] = (module, wq)
    return found


def finetune(
    recovered: nn.Module,
    teacher: nn.Module,
    plan: Mapping[str, Config],
    order: Sequence[str],
    feeds: Feeds,
    labels: np.ndarray | None,
    params: TrainingParams | None = None,
    *,
    qat: bool,
    on_step: OnStep | None = None,
) -> TrainingResult:
    """Distill (qat=False) or quantization-aware train (qat=True) `recovered` in place against `teacher`
    on `feeds` (the calibration split; `labels` its labels or None). See the module docstring."""
    params = params or TrainingParams()
    method = "qat" if qat else "distill"
    arrays = {name: np.asarray(a) for name, a in feeds.items()}
    n = len(next(iter(arrays.values())))
    n_val = max(1, round(params.validation_fraction * n))
    if n - n_val < 1:
        raise RecoveryError(f"{method} needs at least 2 calibration samples, got {n}")
    permutation = np.random.default_rng(params.seed).permutation(n)
    val_index, train_index = np.sort(permutation[:n_val]), np.sort(permutation[n_val:])
    result = TrainingResult(n_train=len(train_index), n_validation=n_val)
    use_labels = labels is not None and params.alpha > 0
    result.labelled = labels is not None
    if params.alpha > 0 and labels is None:
        result.notes.append("alpha > 0 but the calibration split has no labels: KL only")
    targets = None if labels is None else torch.from_numpy(np.asarray(labels).astype(np.int64))

    grids = grid_layers(recovered, plan, order)
    if qat and not grids:
        raise RecoveryError("QAT needs a configuration that quantizes the weights of a Conv or Linear layer")
    compressed_layers = linear_layers(recovered, [n for n in order if n in plan])
    masked = {name for name in compressed_layers if prunes(plan[name]) and (name not in grids or qat)}
    frozen = {
        f"{name}.weight" for name in compressed_layers if not (qat and name in grids) and name not in masked
    }
    for name in compressed_layers:
        if name in masked and name not in grids:
            result.notes.append(
                f"{name}: {plan[name].id} trains its surviving weights under the pruning mask"
            )
        elif name not in grids:
            result.notes.append(
                f"{name}: {plan[name].id} has no integer weight grid; its weights stay frozen"
            )
        elif type(plan[name]) is not WeightQuant:
            result.notes.append(f"{name}: trained with its weight grid only, not the rest of {plan[name].id}")
    with torch.no_grad():  # the student starts as it runs: grid weights at their quantized values
        for module, wq in grids.values():
            module.weight.copy_(grid_of(module.weight.detach().to(torch.float32), wq).fake(module.weight))
    result.quantized = list(grids)

    teacher = teacher.eval()
    recovered.eval()  # batch norm keeps its running statistics, dropout is off: the student as it will run
    teacher_val = _outputs(teacher, arrays, val_index, 256)
    wanted_grad = {name: p.requires_grad for name, p in recovered.named_parameters()}
    if qat:
        fake_quant.attach(grids)
    masks: PruningMasks | None = None
    try:
        trainable: list[nn.Parameter] = []
        for name, parameter in recovered.named_parameters():
            plain = name.replace("parametrizations.weight.original", "weight")
            if plain in frozen or not parameter.is_floating_point():
                parameter.requires_grad_(False)
            else:
                parameter.requires_grad_(True)
                trainable.append(parameter)
                result.trained.append(plain)
        if not trainable:
            raise RecoveryError(f"{method}: the configuration leaves no parameter to train")
        parameters = dict(recovered.named_parameters())
        masks = PruningMasks(
            {name: parameters[_weight_parameter(parameters, name)] for name in sorted(masked)}
        )
        result.masked = sorted(masked)
        optimiser = torch.optim.Adam(trainable, lr=params.learning_rate)
        generator = torch.Generator().manual_seed(params.seed)

        def heldout_kl() -> float:
            return float(temperature_kl(_outputs(recovered, arrays, val_index, 256), teacher_val, 1.0))

        best_kl = result.start_heldout_kl = heldout_kl()
        best_state = copy.deepcopy(recovered.state_dict())
        since_best = 0
        queue: list[int] = []
        for step in range(1, params.steps + 1):
            if len(queue) < params.batch_size:
                queue += train_index[torch.randperm(len(train_index), generator=generator).numpy()].tolist()
            batch = np.array(queue[: params.batch_size])
            del queue[: params.batch_size]
            with torch.no_grad():
                target = _forward(teacher, arrays, batch)
            student = _forward(recovered, arrays, batch)
            loss = temperature_kl(student, target, params.temperature)
            if use_labels and targets is not None:
                ce = F.cross_entropy(student, targets[torch.from_numpy(batch)])
                loss = (1 - params.alpha) * loss + params.alpha * ce
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            masks.reapply()
            measured = None
            if step % params.eval_every == 0 or step == params.steps:
                measured = heldout_kl()
                if measured < best_kl:
                    best_kl, since_best, result.best_step = measured, 0, step
                    best_state = copy.deepcopy(recovered.state_dict())
                else:
                    since_best += 1
            result.curve.append({"step": step, "loss": float(loss.detach()), "heldout_kl": measured})
            result.steps_run = step
            if on_step is not None:
                on_step(TrainingStep(step, params.steps, float(loss.detach()), measured))
            if params.patience and since_best >= params.patience:
                result.stopped_early = step < params.steps
                break
        recovered.load_state_dict(best_state)
        result.best_heldout_kl = best_kl
    finally:
        if masks is not None:
            masks.remove()
        if qat:
            fake_quant.detach_quantized(grids)
        for name, parameter in recovered.named_parameters():
            parameter.requires_grad_(wanted_grad.get(name, parameter.requires_grad))
    return result
