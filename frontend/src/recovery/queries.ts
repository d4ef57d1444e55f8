// The recovery API: launch a job ("recover this") and read its summary.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import { keys } from "../api/keys";
import { POLL_MS, isActive } from "../api/polling";
import { isOffline } from "../offline/mode";
import type { components } from "../client/schema";

type Params = components["schemas"]["RecoveryJobParams"];

export function useRecoverySummary(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: ["recovery", jobId] as const,
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/recovery", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

/** The per-layer before/after of a recovery job (404 for jobs run before it was recorded). */
export function useRecoveryLayers(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: ["recovery", jobId, "layers"] as const,
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/recovery/layers", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
    retry: false,
  });
}

/** The model (once its id is known): the "recover this" button needs its format. */
export function useModelWhenKnown(modelId: string | undefined) {
  return useQuery({
    queryKey: keys.model(modelId ?? ""),
    queryFn: () => unwrap(api.GET("/api/v1/models/{model_id}", { params: { path: { model_id: modelId ?? "" } } })),
    enabled: !!modelId,
  });
}

/** The recovery jobs launched from one sweep point, newest first (the server's record: a reload or another
 * browser sees the same); polled while the newest still runs. Keyed under the project's jobs, so a launch
 * (useCreateRecovery) asks again. */
export function usePointRecoveries(projectId: string, pointId: string) {
  return useQuery({
    queryKey: [...keys.jobs(projectId), "sweep-point", pointId] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "recovery", sweep_point_id: pointId, limit: 20 } },
        }),
      ),
    enabled: projectId !== "" && !isOffline(),
    refetchInterval: (query) => {
      const newest = query.state.data?.items[0];
      return newest && isActive(newest) ? POLL_MS : false;
    },
  });
}

export function useCreateRecovery(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (params: Params) =>
      unwrap(api.POST("/api/v1/recovery-jobs", { body: { project_id: projectId, params } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.jobs(projectId) }),
  });
}

export const recoveredModelHref = (jobId: string): string => `/api/v1/jobs/${jobId}/recovery/model`;

/** The recovery jobs launched from a sensitivity job's mixed-precision plans, newest first (each names its
 * plan's average bits in `params.sensitivity_plan`); polled while the newest still runs. */
export function usePlanRecoveries(projectId: string, scanJobId: string) {
  return useQuery({
    queryKey: [...keys.jobs(projectId), "sensitivity-plans", scanJobId] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "recovery", sensitivity_job_id: scanJobId, limit: 100 } },
        }),
      ),
    enabled: projectId !== "" && !isOffline(),
    refetchInterval: (query) => (query.state.data?.items.some((job) => isActive(job)) ? POLL_MS : false),
  });
}
