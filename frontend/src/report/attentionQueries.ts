// Server state of the attention-map panel: GET /jobs/{id}/fidelity/attention (backend/api/routes/attention.py).
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";

/** The attention-map fidelity of a fidelity job; a 404 ApiError when it has none (not an ONNX pair with
 * attention softmaxes). */
export function useFidelityAttention(jobId: string) {
  return useQuery({
    queryKey: ["fidelity-attention", jobId],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/attention", { params: { path: { job_id: jobId } } })),
    staleTime: Infinity,
    retry: false,
  });
}
