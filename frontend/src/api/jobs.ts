// Jobs: one job (polled while it moves), the job kinds, launching and cancelling, a job's chunks.
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./http";
import { isOffline } from "../offline/mode";
import { keys } from "./keys";
import { POLL_MS, isActive } from "./polling";
import type { Job } from "./types";

export const JOBS_PAGE = 20;

export function useJob(jobId: string) {
  return useQuery({
    queryKey: keys.job(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } })),
    refetchInterval: (query) => (query.state.data && isActive(query.state.data) ? POLL_MS : false),
  });
}

export function useJobKinds(enabled = true) {
  return useQuery({
    queryKey: keys.jobKinds,
    queryFn: () => unwrap(api.GET("/api/v1/job-kinds")),
    staleTime: Infinity,
    enabled,
  });
}

/** SweepJobParams' JSON Schema (its task metrics and their directions), asked for online only. */
export function useSweepSchema(): unknown {
  return useJobKinds(!isOffline()).data?.find((k) => k.kind === "sweep")?.params_schema;
}

export function useCreateJob(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ kind, params }: { kind: string; params: Record<string, unknown> }) =>
      unwrap(api.POST("/api/v1/jobs", { body: { project_id: projectId, kind, params } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.jobs(projectId) }),
  });
}

export function useCancelJob(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (jobId: string) =>
      unwrap(api.POST("/api/v1/jobs/{job_id}/cancel", { params: { path: { job_id: jobId } } })),
    onSettled: () => client.invalidateQueries({ queryKey: keys.jobs(projectId) }),
  });
}

/** The chunks a job fanned out into (empty for a one-piece job); polled while the job runs. */
export function useJobChunks(job: Job | undefined) {
  const jobId = job?.id ?? "";
  const active = !!job && isActive(job);
  return useQuery({
    // The status is in the key so that the chunks are read once more when the job ends.
    queryKey: [...keys.chunks(jobId), job?.status],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/chunks", { params: { path: { job_id: jobId } } })),
    enabled: jobId !== "",
    placeholderData: keepPreviousData,
    refetchInterval: active ? POLL_MS : false,
  });
}
