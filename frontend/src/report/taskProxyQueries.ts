// Server state of the "Does divergence predict the task?" section (backend/api/routes/task_proxy.py).
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";

/** The proxy document with one scatter point per sample; a 404 ApiError when the job has no task values. */
export function useTaskProxy(jobId: string) {
  return useQuery({
    queryKey: ["fidelity-task", jobId],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/task", { params: { path: { job_id: jobId } } })),
    staleTime: Infinity,
    retry: false,
  });
}

/** A page of the per-sample rows sorted by a task metric, worst first. */
export function useTaskSamples(jobId: string, metric: string, offset: number, limit: number) {
  return useQuery({
    queryKey: ["fidelity-task-samples", jobId, metric, offset, limit],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/fidelity/task/samples", {
          params: { path: { job_id: jobId }, query: { metric, order: "worst", offset, limit } },
        }),
      ),
    placeholderData: keepPreviousData,
    staleTime: Infinity,
    retry: false,
  });
}
