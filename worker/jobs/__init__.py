"""What each job does: one module per job kind and step (load rows by id, call the engine, write results).

How a job runs — the Celery app, task registration, claims, heartbeats, fan-out, lost work — is the worker
runtime beside this package (`worker/celery_app.py`, `worker/tasks.py`, `worker/runtime.py`,
`worker/fanout.py`, `worker/lost_work.py`, `worker/oom_evidence.py`). The engine never imports this package
(tests/worker/test_engine_boundary.py).
"""
