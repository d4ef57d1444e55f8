"""Dataset reading in one place: one reader per dataset kind behind one interface, used both by the API's
upload check and by the jobs, with the archive safety limits applied by the same code everywhere.

It sits at the top level, beside ``backend`` and ``worker``, because both import it and neither may
import the other's heavy side: the API never loads torch or onnxruntime (nor anything under ``worker``),
and the engine never loads the service. So it imports numpy, Pillow and the standard library only — no
torch, onnxruntime, scipy or sklearn, no backend, SQL, HTTP or Celery (tests/dataset_readers/
test_boundary.py) — and reads no settings: callers pass the archive limits in
(backend/archive_limits.py), and map its errors (``errors``) to their own.

- ``interface``: ``DatasetReader`` (``describe`` for the upload check, ``arrays`` for the jobs),
  ``RowReader`` (``rows``, where a kind reads single samples cheaply), and the values they return;
- ``registry``: ``reader_for(kind)``, the only place that names the kinds;
- ``archives``: the archive safety rules (member count, size, zip bombs, paths, links) for every archive
  an upload or a worker opens, datasets and zipped models alike;
- ``npz``: .npz datasets (described from headers, memory-mapped, read by rows);
- ``image_zip``: zips of images with an optional labels.csv (described, decoded through a recipe);
- ``text``: a JSONL of prompts or a plain-text corpus (checked and parsed here, tokenized by the caller's
  ``ReadOptions.tokenize`` at job time).

Extension points. Audio datasets arrive with the
task-metrics and language-model issues; each is a package here beside ``npz`` and ``image_zip`` with a
reader implementing ``DatasetReader`` (``RowReader`` too if it can), registered in ``registry`` under its
kind, and any option it needs (a tokenizer, a sample rate) added to ``ReadOptions``. Nothing else changes:
the upload check and the jobs already ask the registry.
"""
