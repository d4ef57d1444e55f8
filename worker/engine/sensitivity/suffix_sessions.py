"""onnxruntime sessions of parts of the optimised golden graph (prefixes and cell suffixes), with the golden
weights held once for all of them.

A scan keeps up to `MAX_OPEN_SESSIONS` part sessions open at once (`sensitivity.suffix`), and most of them
read the same golden weights. Loaded from the golden side file, each session mapped and read its own copy:
on the ResNet-18 shape at 64 px (256 inputs, W8/W4, 1 thread) the scan process peaked at 1447 MiB, its
file-backed resident memory growing by one model's weights per session run. Here every golden weight is one
read-only view of the memory-mapped side file, wrapped once as an `OrtValue` and handed to each session with
`SessionOptions.add_initializer`, which onnxruntime uses in place of the graph's initializer of that name
(names a part does not use are ignored). A cell's own changed weights have golden names too, so they are left
out of what it is handed (`own`). Same graph, same kernels, same numbers: the scan's cells equal the full
re-run's (tests/engine/test_sensitivity_suffix.py), and that process peaked at 1042 MiB; with one arena for
every part session (`_share_one_arena`) and the other changes of that stop (the golden model's own sessions
closed before the scan, no cache of compressed tensors, shape inference without the weights' values, a float32
probe), at 906 MiB, in the same time.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import EngineError
from worker.engine.loaders import OnnxRunner

if TYPE_CHECKING:
    import onnx


def session_options(threads: int | None, optimise: bool) -> Any:
    """Options of a session that optimises a graph (to write it out) or runs an optimised part as is."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    options.log_severity_level = 3  # saving an NCHWc graph warns that it suits this CPU only: it does
    if not optimise:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        _share_one_arena(options)
    return options


_ENV_ARENA: list[bool] = []


def _share_one_arena(options: Any) -> None:
    """Make the session allocate from one CPU arena registered with onnxruntime's environment, shared by
    every part session, instead of an arena of its own. Each session's own arena kept the largest batch it
    had run: with the weights shared, the ResNet-18 shape's scan peaked at 1295 MiB with an arena per session
    and 906 MiB with the shared one (no arena at all: 1011 MiB, and glibc kept what the runs freed). The arena
    grows by what is asked (kSameAsRequested), not to the next power of two: 826-849 MiB against 853-874 in
    the same runs (the scan's runs ask for the same sizes batch after batch, so it stops growing early)."""
    import onnxruntime as ort

    if not _ENV_ARENA:
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        # already registered in this process (a reloaded module): the sessions use that one
        with contextlib.suppress(Exception):
            same_as_requested = (
                1  # arena_extend_strategy: 0 kNextPowerOfTwo (the default), 1 kSameAsRequested
            )
            ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, same_as_requested, -1, -1))
        _ENV_ARENA.append(True)
    options.add_session_config_entry("session.use_env_allocators", "1")


class SharedWeights:
    """The optimised golden graph's weights held in its side file, as one `OrtValue` each (no copy)."""

    def __init__(self, initializers: Iterable[onnx.TensorProto], data: Mapping[str, np.ndarray]) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import helper

        self._arrays: dict[str, np.ndarray] = {}
        self._values: dict[str, Any] = {}
        for init in initializers:
            if init.data_location != onnx.TensorProto.EXTERNAL or init.data_type in (
                onnx.TensorProto.STRING,
                onnx.TensorProto.UNDEFINED,
            ):
                continue  # inline weights are small, and the part carries them itself
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(init.data_type))
            raw = data[init.name]
            if raw.size != int(np.prod(init.dims, dtype=np.int64)) * dtype.itemsize:
                continue  # packed sub-byte types: let onnxruntime read the file
            array = np.asarray(raw).view(dtype).reshape(tuple(init.dims))
            self._arrays[init.name] = array  # the OrtValue points into it: it must outlive every session
            self._values[init.name] = ort.OrtValue.ortvalue_from_numpy(array)

    def hand_to(self, options: Any, own: frozenset[str]) -> None:
        """Give a session every golden weight, except the ones a cell changed (`own`)."""
        for name, value in self._values.items():
            if name not in own:
                options.add_initializer(name, value)


def part_session(
    folder: Path,
    data: bytes,
    threads: int | None,
    shared: SharedWeights | None,
    own: frozenset[str] = frozenset(),
) -> OnnxRunner:
    """A session of a part of the optimised graph (serialised in `data`), loaded from a file in `folder`
    beside golden.bin (where the weights that `shared` does not hold are read), with optimisation off."""
    import onnxruntime as ort

    options = session_options(threads, optimise=False)
    if shared is not None:
        shared.hand_to(options, own)
    fd, name = tempfile.mkstemp(suffix=".onnx", dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        session = ort.InferenceSession(name, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's pybind errors share no public base class
        raise EngineError(f"onnxruntime could not load a suffix of the model: {exc}") from exc
    finally:
        Path(name).unlink(missing_ok=True)
    return OnnxRunner(session)
