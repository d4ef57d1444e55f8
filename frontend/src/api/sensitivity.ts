// A sensitivity job's matrix, mixed-precision plans and channel importance; the scans a compare page overlays.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./http";
import { keys } from "./keys";

/** A sensitivity job's matrix: each layer compressed alone ("only") or all but it ("all_but", 404 if not run). */
export function useSensitivityReport(jobId: string, view: "only" | "all_but", enabled: boolean) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), view],
    queryFn: () =>
      unwrap(
        view === "only"
          ? api.GET("/api/v1/jobs/{job_id}/sensitivity", { params: { path: { job_id: jobId } } })
          : api.GET("/api/v1/jobs/{job_id}/sensitivity/all-but", { params: { path: { job_id: jobId } } }),
      ),
    enabled,
    staleTime: Infinity,
  });
}

export function useMixedPrecisionPlans(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), "plans"],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/sensitivity/plans", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

export type ImportanceMethod = "l1" | "l2" | "taylor" | "reconstruction";

/** One layer's channel importance, most important first; at most `limit` channels (the server cuts). */
export function useChannelImportance(jobId: string, layer: string, method: ImportanceMethod, limit: number) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), "channels", layer, method, limit],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/sensitivity/channels", {
          params: { path: { job_id: jobId }, query: { layer, method, limit } },
        }),
      ),
    enabled: layer !== "",
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The project's succeeded sensitivity jobs, newest first (the scans the compare page can overlay). */
export function useSensitivityJobs(projectId: string) {
  return useQuery({
    queryKey: keys.sensitivityJobs(projectId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "sensitivity", status: "succeeded", limit: 100 } },
        }),
      ),
    enabled: projectId !== "",
    // Scans finish while the user looks elsewhere: never show a remembered list without asking again.
    staleTime: 0,
    refetchOnMount: "always",
  });
}

export function useSensitivityProfiles(jobIds: string[]) {
  return useQuery({
    queryKey: [...keys.profiles, ...jobIds],
    queryFn: () => unwrap(api.GET("/api/v1/sensitivity-profiles", { params: { query: { job_ids: jobIds } } })),
    enabled: jobIds.length > 0,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}
