// Server state of the "why it diverges" panels: one hook per route of backend/api/routes/diagnostics.py.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";

/** Per-class damage of a fidelity job; a 404 ApiError when the job has no classification output. */
export function useFidelityClasses(jobId: string) {
  return useQuery({
    queryKey: ["fidelity-classes", jobId],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/classes", { params: { path: { job_id: jobId } } })),
    staleTime: Infinity,
    retry: false,
  });
}

/** Sequence fidelity of a fidelity job; a 404 ApiError when no output is shaped (N, T, D). */
export function useFidelitySequence(jobId: string) {
  return useQuery({
    queryKey: ["fidelity-sequence", jobId],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/sequence", { params: { path: { job_id: jobId } } })),
    staleTime: Infinity,
    retry: false,
  });
}

/** The samples of one confusion cell (golden class → compressed class), highest KL first. */
export function useCellSamples(jobId: string, cell: { golden: number; compressed: number } | null) {
  return useQuery({
    queryKey: ["fidelity-cell", jobId, cell?.golden, cell?.compressed],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/fidelity/classes/samples", {
          params: {
            path: { job_id: jobId },
            query: { golden_class: cell?.golden ?? 0, compressed_class: cell?.compressed ?? 0, limit: 100 },
          },
        }),
      ),
    enabled: cell !== null,
    staleTime: Infinity,
    placeholderData: keepPreviousData,
  });
}
