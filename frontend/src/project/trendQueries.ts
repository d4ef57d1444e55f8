// Server state of the trends chart (backend/api/routes/trends.py).
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import type { components } from "../client/schema";

export type Trend = components["schemas"]["TrendOut"];
export type TrendPoint = components["schemas"]["TrendPointOut"];

/** Every succeeded fidelity job against this golden model, oldest first. */
export function useFidelityTrend(projectId: string, goldenModelId: string, datasetId: string | null) {
  return useQuery({
    queryKey: ["fidelity-trend", projectId, goldenModelId, datasetId],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/projects/{project_id}/trends", {
          params: {
            path: { project_id: projectId },
            query: { golden_model_id: goldenModelId, ...(datasetId ? { dataset_id: datasetId } : {}) },
          },
        }),
      ),
    enabled: projectId !== "" && goldenModelId !== "",
  });
}
