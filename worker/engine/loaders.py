"""Load a model file into a `Runner`: one small adapter per `ModelFormat`.

Every runtime failure while loading becomes a `ModelLoadError` whose text keeps the runtime's own
message, because that message is usually the only clue a user gets (protobuf parse errors, missing
external data, a zip that is not a TorchScript archive...). Nothing here unpickles on its own:
TorchScript and torch.export archives are read by their own loaders only.

torch and onnxruntime are imported inside the functions that need them, so that loading an ONNX
model does not pay for importing torch and vice versa.
"""

from __future__ import annotations

import json
import stat
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import DatasetMismatchError, EngineError, ModelLoadError
from worker.engine.types import Dim, ModelFormat, Runner, TensorSpec

if TYPE_CHECKING:
    import onnxruntime
    import torch

TORCHSCRIPT_SPEC_FILE = "kneeboard_io.json"
"""Extra file inside a TorchScript archive (torch.jit.save(_extra_files=...)) with the I/O specs:
{"inputs": [{"name", "shape", "dtype"}...], "outputs": [...]}. TorchScript records neither input
shapes nor dtypes; `demo_models.export_torchscript` writes this file, other archives lack it."""

_ORT_TO_NUMPY = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(bfloat16)": "bfloat16",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(uint16)": "uint16",
    "tensor(int32)": "int32",
    "tensor(uint32)": "uint32",
    "tensor(int64)": "int64",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
    "tensor(string)": "str",
}


def load_model(path: Path, fmt: ModelFormat, *, intra_op_threads: int | None = None) -> Runner:
    """Load `path` as `fmt` and return a runner; any load failure raises `ModelLoadError`.

    `intra_op_threads` limits the runtime's intra-op thread pool. For the torch formats this calls
    torch.set_num_threads, which is process-wide: the last loaded torch model's setting wins.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"Model file {path.name} does not exist or is not a file.")
    if fmt == "onnx":
        return _load_onnx(path, intra_op_threads)
    if fmt == "onnx_zip":
        return _load_onnx_zip(path, intra_op_threads)
    if fmt == "torch_export":
        return _load_torch_export(path, intra_op_threads)
    if fmt == "torchscript":
        return _load_torchscript(path, intra_op_threads)
    raise ModelLoadError(
        f"Unknown model format {fmt!r}; expected onnx, onnx_zip, torch_export or torchscript."
    )


# --------------------------------------------------------------------------------------------- feeds


def _check_feeds(
    feeds: Mapping[str, np.ndarray], inputs: Sequence[TensorSpec], *, cast: bool = True
) -> list[np.ndarray]:
    """Return the arrays in input order, cast within their kind (float64 -> float32) where needed.

    Raises DatasetMismatchError for missing or unknown names, a wrong rank, a fixed dim that differs,
    or a dtype that cannot be cast safely within its kind (e.g. float -> int).
    """
    names = [spec.name for spec in inputs]
    missing = [name for name in names if name not in feeds]
    unknown = [name for name in feeds if name not in names]
    if missing or unknown:
        raise DatasetMismatchError(
            f"The model's inputs are {names}; missing: {missing or 'none'}, unexpected: {unknown or 'none'}."
        )
    return [_fit_array(np.asarray(feeds[spec.name]), spec, cast) for spec in inputs]


def _fit_array(array: np.ndarray, spec: TensorSpec, cast: bool) -> np.ndarray:
    if spec.shape and array.ndim != len(spec.shape):
        raise DatasetMismatchError(
            f"Input {spec.name!r} expects rank {len(spec.shape)} {list(spec.shape)}, got shape {list(array.shape)}."
        )
    for axis, (want, got) in enumerate(zip(spec.shape, array.shape, strict=False)):
        if isinstance(want, int) and want != got:
            raise DatasetMismatchError(
                f"Input {spec.name!r} expects size {want} on axis {axis} {list(spec.shape)}, "
                f"got shape {list(array.shape)}."
            )
    if not cast:
        return array
    try:
        wanted = np.dtype(spec.dtype)
    except TypeError:  # a dtype numpy does not know (bfloat16): leave the array as it is
        return array
    if array.dtype == wanted:
        return array
    if not np.can_cast(array.dtype, wanted, casting="same_kind"):
        raise DatasetMismatchError(f"Input {spec.name!r} expects {spec.dtype}, got {array.dtype}.")
    return array.astype(wanted)


# ---------------------------------------------------------------------------------------------- onnx


class OnnxRunner:
    """An onnxruntime CPU session. Owns the temporary folder of an extracted `onnx_zip`, if any."""

    def __init__(
        self, session: onnxruntime.InferenceSession, workdir: tempfile.TemporaryDirectory[str] | None = None
    ) -> None:
        self._session: onnxruntime.InferenceSession | None = session
        self._workdir = workdir  # kept alive as long as the session may read external data
        self._inputs = [_ort_spec(arg) for arg in session.get_inputs()]
        self._outputs = [_ort_spec(arg) for arg in session.get_outputs()]

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._outputs)

    @property
    def extracted_to(self) -> Path | None:
        """Folder an `onnx_zip` was extracted into (deleted by close()); None for a plain .onnx."""
        return Path(self._workdir.name) if self._workdir is not None else None

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise EngineError("This ONNX model was closed; load it again to run it.")
        arrays = _check_feeds(feeds, self._inputs)
        names = [spec.name for spec in self._outputs]
        try:
            results = self._session.run(names, dict(zip([s.name for s in self._inputs], arrays, strict=True)))
        except Exception as exc:  # onnxruntime raises its own pybind exception types
            raise EngineError(f"onnxruntime failed to run the model: {exc}") from exc
        return {name: np.asarray(value) for name, value in zip(names, results, strict=True)}

    def close(self) -> None:
        """Drop the session and delete the extracted files (if any) now rather than at exit."""
        self._session = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None


def _ort_spec(arg: Any) -> TensorSpec:
    shape: tuple[Dim, ...] = tuple(
        dim if isinstance(dim, int | str) and dim != "" else None for dim in (arg.shape or [])
    )
    return TensorSpec(name=arg.name, shape=shape, dtype=_ORT_TO_NUMPY.get(arg.type, arg.type))


def _load_onnx(
    path: Path, intra_op_threads: int | None, workdir: tempfile.TemporaryDirectory[str] | None = None
) -> OnnxRunner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # InvalidProtobuf, Fail, NoSuchFile... share no public base class
        raise ModelLoadError(f"onnxruntime could not load {path.name}: {exc}") from exc
    return OnnxRunner(session, workdir)


def _load_onnx_zip(path: Path, intra_op_threads: int | None) -> OnnxRunner:
    workdir = tempfile.TemporaryDirectory(prefix="kneeboard-onnx-")
    try:
        model_path = extract_onnx_zip(path, Path(workdir.name))
        return _load_onnx(model_path, intra_op_threads, workdir)
    except BaseException:
        workdir.cleanup()
        raise


ArchiveCheck = Callable[[Sequence[zipfile.ZipInfo], int], "str | None"]
"""The archive rules of the service that calls the engine: given a zip's directory and its size on disk, the
first problem as a phrase that completes "the zip archive ...", or None. The worker passes its settings'
limits (worker/model_files.py); the engine itself knows no limits and reads no settings."""


def extract_onnx_zip(path: Path, dest: Path, check: ArchiveCheck | None = None) -> Path:
    """Extract a zip holding exactly one .onnx (plus its external data) into `dest`; return the .onnx.

    Refuses, by raising ModelLoadError, archives for which `check` names a problem (the caller's archive
    rules: member count, total size, zip bombs, unsafe paths), members that would be written outside `dest`,
    and archives with zero or several .onnx files. `__MACOSX/` resource-fork entries are skipped.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            problem = _unsafe_member(archive.infolist())
            if problem is None and check is not None:
                problem = check(archive.infolist(), path.stat().st_size)
            if problem is not None:
                raise ModelLoadError(f"{path.name}: the zip archive {problem}; refusing it.")
            members = [info for info in archive.infolist() if not info.filename.startswith("__MACOSX/")]
            models = [info.filename for info in members if info.filename.lower().endswith(".onnx")]
            if len(models) != 1:
                raise ModelLoadError(
                    f"{path.name} must hold exactly one .onnx file, found {len(models)}: {models}."
                )
            for info in members:
                _extract_member(archive, info, dest)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, OSError) as exc:
        raise ModelLoadError(f"Could not read {path.name} as a zip archive: {exc}") from exc
    return dest / models[0]


def _unsafe_member(infos: Sequence[zipfile.ZipInfo]) -> str | None:
    """Why extracting some member could write outside its folder or create a link; None when none could.
    The engine refuses these whatever the caller's rules (the service's own, stricter check runs first)."""
    for info in infos:
        name = info.filename.replace("\\", "/")
        if name.startswith("/") or PureWindowsPath(info.filename).drive:
            return f"holds member {info.filename!r} with an absolute path"
        if ".." in PurePosixPath(name).parts:
            return f"holds member {info.filename!r}, which points outside the archive ('..')"
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"holds member {info.filename!r}, a symbolic link"
    return None


def _extract_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> None:
    target = dest.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
    if not target.resolve().is_relative_to(dest.resolve()):  # even when the caller's check let it through
        raise ModelLoadError(f"Zip entry {info.filename!r} would be written outside its folder; refusing it.")
    if info.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(info) as source, target.open("wb") as sink:
        while chunk := source.read(1 << 20):
            sink.write(chunk)


# --------------------------------------------------------------------------------------------- torch


class TorchRunner:
    """Runs a torch callable (an exported program's module or a TorchScript module) on CPU.

    `flatten` turns the callable's output into a list of tensors in the order of `outputs`.
    When `outputs` are not known before the first run (TorchScript returning a dict or list without
    a spec file), they are filled in from the first result. With `dtypes_known=False` (TorchScript
    without a spec file) feeds are passed with their own dtype instead of being cast to the spec's.
    `program` keeps the ExportedProgram of a torch_export model for inspection.
    """

    def __init__(
        self,
        module: Callable[..., Any],
        inputs: list[TensorSpec],
        outputs: list[TensorSpec] | None,
        flatten: Callable[[Any], tuple[list[str], list[Any]]],
        *,
        dtypes_known: bool = True,
        program: torch.export.ExportedProgram | None = None,
    ) -> None:
        self.module = module
        self.program = program
        self._inputs = inputs
        self._outputs = outputs
        self._flatten = flatten
        self._dtypes_known = dtypes_known

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._outputs or [])

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        arrays = _check_feeds(feeds, self._inputs, cast=self._dtypes_known)
        tensors = [torch.from_numpy(np.require(array, requirements=["C", "W"])) for array in arrays]
        try:
            with torch.inference_mode():
                result = self.module(*tensors)
        except Exception as exc:  # whatever the model's own code raises
            raise EngineError(f"torch failed to run the model: {exc}") from exc
        names, values = self._flatten(result)
        if self._outputs is None:
            self._outputs = [
                _torch_value_spec(name, value) for name, value in zip(names, values, strict=True)
            ]
        if len(values) != len(self._outputs):
            raise EngineError(f"The model returned {len(values)} outputs, expected {len(self._outputs)}.")
        return {spec.name: _to_numpy(value) for spec, value in zip(self._outputs, values, strict=True)}


def _to_numpy(value: Any) -> np.ndarray:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _torch_dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _torch_dim(size: Any) -> Dim:
    """A concrete int stays an int; a symbolic size (torch.SymInt) becomes its name, e.g. 's77'."""
    return size if isinstance(size, int) else str(size)


def _torch_value_spec(name: str, value: Any) -> TensorSpec:
    """Spec of a (possibly fake) tensor; a non-tensor value gets shape () and its Python type name."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(name, tuple(_torch_dim(s) for s in value.shape), _torch_dtype_name(value.dtype))
    return TensorSpec(name, (), type(value).__name__)


def _set_threads(intra_op_threads: int | None) -> None:
    import torch

    if intra_op_threads is not None:
        torch.set_num_threads(intra_op_threads)


def torch_export_specs(program: torch.export.ExportedProgram) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """User inputs and outputs of an exported program, with shapes and dtypes from the graph's
    example metadata (node.meta['val']); symbolic sizes are named by their symbol (e.g. 's77')."""
    from torch.export.graph_signature import InputKind, OutputKind

    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    inputs = [
        _torch_value_spec(spec.arg.name, node.meta.get("val"))
        for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True)
        if spec.kind == InputKind.USER_INPUT
    ]
    output_node = next(node for node in program.graph.nodes if node.op == "output")
    returned = output_node.args[0]
    outputs = [
        _torch_value_spec(spec.arg.name, getattr(value, "meta", {}).get("val"))
        for spec, value in zip(program.graph_signature.output_specs, returned, strict=True)
        if spec.kind == OutputKind.USER_OUTPUT
    ]
    return inputs, outputs


def _flatten_export_output(result: Any) -> tuple[list[str], list[Any]]:
    from torch.utils import _pytree

    leaves = _pytree.tree_leaves(result)
    return [f"output_{i}" for i in range(len(leaves))], leaves


def _load_torch_export(path: Path, intra_op_threads: int | None) -> TorchRunner:
    import torch

    _set_threads(intra_op_threads)
    try:
        program = torch.export.load(str(path))
        module = program.module()
        inputs, outputs = torch_export_specs(program)
    except Exception as exc:  # torch raises RuntimeError, ValueError, KeyError... depending on the damage
        raise ModelLoadError(f"torch.export.load could not load {path.name}: {exc}") from exc
    return TorchRunner(module, inputs, outputs, _flatten_export_output, program=program)


def _flatten_script_output(result: Any) -> tuple[list[str], list[Any]]:
    """A tensor -> "output"; a tuple or list -> "output_0", "output_1"...; a dict -> its keys."""
    import torch

    if isinstance(result, torch.Tensor):
        return ["output"], [result]
    if isinstance(result, dict):
        return [str(key) for key in result], list(result.values())
    if isinstance(result, tuple | list):
        return [f"output_{i}" for i in range(len(result))], list(result)
    return ["output"], [result]


def torchscript_specs(
    module: torch.jit.ScriptModule, spec_json: str | None
) -> tuple[list[TensorSpec], list[TensorSpec] | None]:
    """Input / output specs of a TorchScript module.

    With the kneeboard spec file (see TORCHSCRIPT_SPEC_FILE) they are exact. Without it the inputs
    are the tensor arguments of forward() (self skipped) with shape () - meaning unknown rank, since
    TorchScript does not record it - and dtype float32 by assumption; outputs follow forward()'s return
    type: Tensor -> "output", Tuple[n] -> "output_0".."output_{n-1}", anything else (dict, list) -> None,
    i.e. learnt from the first run.
    """
    if spec_json:
        data = json.loads(spec_json)
        return [_spec_from_json(item) for item in data["inputs"]], [
            _spec_from_json(item) for item in data["outputs"]
        ]
    schema = module.forward.schema  # type: ignore[attr-defined]
    inputs = [
        TensorSpec(arg.name, _script_shape(arg.type), "float32")
        for arg in schema.arguments[1:]
        if arg.type.kind() == "TensorType"
    ]
    return inputs, _script_outputs(schema.returns)


def _spec_from_json(item: Mapping[str, Any]) -> TensorSpec:
    return TensorSpec(str(item["name"]), tuple(item["shape"]), str(item["dtype"]))


def _script_shape(tensor_type: Any) -> tuple[Dim, ...]:
    rank = tensor_type.dim() if hasattr(tensor_type, "dim") else None
    return (None,) * rank if rank is not None else ()


def _script_outputs(returns: Sequence[Any]) -> list[TensorSpec] | None:
    if len(returns) != 1:
        return None
    kind = returns[0].type.kind()
    if kind == "TensorType":
        return [TensorSpec("output", (), "float32")]
    if kind == "TupleType":
        elements = returns[0].type.elements()
        if all(element.kind() == "TensorType" for element in elements):
            return [TensorSpec(f"output_{i}", (), "float32") for i in range(len(elements))]
    return None


def _load_torchscript(path: Path, intra_op_threads: int | None) -> TorchRunner:
    import torch

    _set_threads(intra_op_threads)
    extra = {TORCHSCRIPT_SPEC_FILE: ""}
    try:
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        module.eval()
        spec_json = extra[TORCHSCRIPT_SPEC_FILE]
        spec_text = spec_json.decode() if isinstance(spec_json, bytes) else spec_json
        inputs, outputs = torchscript_specs(module, spec_text)
    except Exception as exc:  # torch.jit.load raises RuntimeError / ValueError with the archive's problem
        raise ModelLoadError(f"torch.jit.load could not load {path.name}: {exc}") from exc
    return TorchRunner(module, inputs, outputs, _flatten_script_output, dtypes_known=bool(spec_text))
