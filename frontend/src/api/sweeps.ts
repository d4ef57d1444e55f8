// A sweep's points, several sweeps' points and their Pareto frontier, a point's export link.
import { keepPreviousData, useQueries, useQuery } from "@tanstack/react-query";
import type { paths } from "../client/schema";
import { api, unwrap } from "./http";
import { keys } from "./keys";

/** The server's largest page of sweep points (a sweep has at most 64 configurations + 16 plans + fp32). */
const SWEEP_POINTS_MAX = 1000;

/**
 * A succeeded sweep's points; with `details` each carries its whole document (runtime, latency, manifest),
 * without only the objectives. A succeeded sweep never changes, so they are read once.
 */
export function useSweepPoints(jobId: string, enabled: boolean, details = true) {
  return useQuery({
    queryKey: [...keys.sweepPoints(jobId), details],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/sweep/points", {
          params: { path: { job_id: jobId }, query: { details, limit: SWEEP_POINTS_MAX } },
        }),
      ),
    enabled,
    staleTime: Infinity,
  });
}

type SweepPointsPage = Awaited<ReturnType<typeof fetchSweepPoints>>;

const fetchSweepPoints = (jobId: string) =>
  unwrap(
    api.GET("/api/v1/jobs/{job_id}/sweep/points", {
      params: { path: { job_id: jobId }, query: { details: false, limit: SWEEP_POINTS_MAX } },
    }),
  );

/** One result for several queries; a module-level function so that useQueries keeps it while nothing changes. */
function combinePages(results: { data?: SweepPointsPage; isPending: boolean; error: Error | null }[]) {
  return {
    pending: results.some((r) => r.isPending),
    error: results.find((r) => r.error !== null)?.error ?? null,
    pages: results.map((r) => r.data),
  };
}

/** Several sweeps' points (objectives only), for the compare page; one query per sweep. */
export function useManySweepPoints(jobIds: readonly string[]) {
  return useQueries({
    combine: combinePages,
    queries: jobIds.map((jobId) => ({
      queryKey: [...keys.sweepPoints(jobId), false],
      queryFn: () => fetchSweepPoints(jobId),
      staleTime: Infinity,
    })),
  });
}

/**
 * The Pareto frontier of the sweeps' points over `objectives` ("kl_mean:min") after `bounds`
 * ("kl_mean<=0.01"). The previous frontier stays drawn while a new one is computed.
 */
export function useSweepFrontier(jobIds: readonly string[], objectives: readonly string[], bounds: readonly string[]) {
  return useQuery({
    queryKey: [...keys.frontier, [...jobIds].sort(), objectives, bounds],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/sweep-frontier", {
          params: { query: { job_ids: [...jobIds], objective: [...objectives], bound: [...bounds] } },
        }),
      ),
    enabled: jobIds.length > 0 && objectives.length > 0,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The project's succeeded sweeps, newest first (those the compare page can put on one frontier). */
export function useSweepJobs(projectId: string) {
  return useQuery({
    queryKey: keys.sweepJobs(projectId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "sweep", status: "succeeded", limit: 100 } },
        }),
      ),
    enabled: projectId !== "",
    // Sweeps finish while the user looks elsewhere: never show a remembered list without asking again.
    staleTime: 0,
    refetchOnMount: "always",
  });
}

const EXPORT_PATH = "/api/v1/jobs/{job_id}/sweep/points/{index}/export" satisfies keyof paths;

/** The path of a point's export (a zip of model.onnx + manifest.json) for a plain download link. */
export const exportHref = (jobId: string, index: number): string =>
  EXPORT_PATH.replace("{job_id}", encodeURIComponent(jobId)).replace("{index}", index.toString());

/** A succeeded sweep's accuracy-aware search (only for a sweep launched with `search`): steps and the returned plan. */
export function useSweepSearch(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: [...keys.sweepPoints(jobId), "search"],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/sweep/search", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}
