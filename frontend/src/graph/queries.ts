// The graph view's reads: the model's graph and the finished jobs that can colour it.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import type { Job } from "../api/types";

export function useModelGraph(modelId: string, enabled: boolean) {
  return useQuery({
    queryKey: ["model-graph", modelId],
    queryFn: () => unwrap(api.GET("/api/v1/models/{model_id}/graph", { params: { path: { model_id: modelId } } })),
    enabled,
    staleTime: Infinity,
    retry: false,
  });
}

/** Succeeded sensitivity and fidelity jobs of the project that ran on this model. */
export function useColourJobs(projectId: string, modelId: string) {
  return useQuery({
    queryKey: ["graph-jobs", projectId, modelId],
    queryFn: async (): Promise<Job[]> => {
      const lists = await Promise.all(
        (["sensitivity", "fidelity"] as const).map((kind) =>
          unwrap(
            api.GET("/api/v1/jobs", {
              params: { query: { project_id: projectId, kind, status: "succeeded", limit: 100 } },
            }),
          ),
        ),
      );
      return lists.flatMap((page) => page.items).filter((job) => jobSide(job, modelId) !== null);
    },
    staleTime: 0,
  });
}

/** How a job relates to the model: the scanned model, a fidelity job's golden or compressed one, or null. */
export function jobSide(job: Job, modelId: string): "scanned" | "golden" | "compressed" | null {
  const params = job.params;
  if (job.kind === "sensitivity") return params["model_id"] === modelId ? "scanned" : null;
  if (params["golden_model_id"] === modelId) return "golden";
  if (params["compressed_model_id"] === modelId) return "compressed";
  return null;
}
