// Server state of the robustness panel: GET /jobs/{id}/robustness (backend/api/routes/robustness.py).
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";

/** The robustness slices of a fidelity job; a 404 ApiError when it was run without them. */
export function useFidelityRobustness(jobId: string) {
  return useQuery({
    queryKey: ["fidelity-robustness", jobId],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/robustness", { params: { path: { job_id: jobId } } })),
    staleTime: Infinity,
    retry: false,
  });
}
