"""The inspect job: load an uploaded model in its runtime and record its inputs, outputs, layers, parameters,
MACs and graph."""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend.contracts import RESULT_MODEL_GRAPH, InspectParams
from backend.db.models import JobResult, Model, ModelStatus
from worker.jobs.inputs import detached_row
from worker.jobs.model_files import model_file
from worker.lost_work import model_invalid
from worker.runtime import JobContext, ResultWriter, json_safe


class InspectHandler:
    """Loads an uploaded model and records its inputs, outputs, layers, parameters and MACs/FLOPs."""

    def run(self, ctx: JobContext) -> ResultWriter:
        from worker.engine.inspection import inspect_with_graph
        from worker.engine.loaders import load_model

        params = InspectParams.model_validate(ctx.params)
        model = detached_row(ctx, Model, params.model_id)
        path, fmt = model_file(ctx, model)
        ctx.progress(0.1, f"loading the {model.format} model in its runtime")
        load_model(path, fmt)  # the runtime that will run it must accept it
        ctx.progress(0.5, "inspecting layers, parameters and MACs")
        inspection, graph_model = inspect_with_graph(path, fmt, model.declared_input_shapes)
        report = json_safe(inspection.to_dict())
        if fmt == "onnx_zip":  # a zipped export may carry its tokenizer.json: its size is checked at launch
            from worker.engine.tasks.generation.tokenizer import tokenizer_facts

            tokenizer = tokenizer_facts(path)
            if tokenizer is not None:
                report["tokenizer"] = tokenizer
        graph = json_safe(graph_model.to_dict())

        def write(session: Session) -> None:
            row = session.get_one(Model, params.model_id)
            row.inspection = report
            session.add(JobResult(job_id=ctx.job_id, key=RESULT_MODEL_GRAPH, payload=graph))
            row.status = ModelStatus.ready.value
            row.error = None

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        model_invalid(session, ctx.params, message)
