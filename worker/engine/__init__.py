"""The engine: plain functions and small classes over arrays and models.

It knows nothing of HTTP, SQL or Celery, so it can be used from a notebook or a CLI.
Heavy imports (torch, onnxruntime, onnx) happen inside the modules that need them.
"""
