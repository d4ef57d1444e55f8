// Managing what a project holds: rename, notes and tags (PATCH), delete, relaunch, and the filtered job list.
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, unwrapEmpty } from "../api/http";
import { JOBS_PAGE } from "../api/jobs";
import { keys } from "../api/keys";
import { POLL_MS, isActive } from "../api/polling";
import type { components } from "../client/schema";

type Schemas = components["schemas"];
export type JobKindName = Schemas["JobKind"];
export type JobStatusName = Schemas["JobStatus"];
export type Managed = "model" | "dataset" | "job";
export type Changes = Schemas["ResourceUpdate"];

export interface JobFilters {
  kind: JobKindName | "";
  status: JobStatusName | "";
  tag: string;
  q: string;
}

export const NO_FILTERS: JobFilters = { kind: "", status: "", tag: "", q: "" };

export const hasFilters = (f: JobFilters): boolean => Boolean(f.kind || f.status || f.tag.trim() || f.q.trim());

/** The list query of a filter: empty fields are left out (no filter). */
export function jobListQuery(projectId: string, filters: JobFilters, offset: number) {
  const tag = filters.tag.trim();
  const q = filters.q.trim();
  return {
    project_id: projectId,
    limit: JOBS_PAGE,
    offset,
    ...(filters.kind ? { kind: filters.kind } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...(tag ? { tag } : {}),
    ...(q ? { q } : {}),
  };
}

export function useFilteredJobs(projectId: string, filters: JobFilters, offset: number) {
  return useQuery({
    // Under keys.jobs(projectId), so every mutation that invalidates the project's jobs refreshes it too.
    queryKey: [...keys.jobs(projectId), offset, filters],
    queryFn: () => unwrap(api.GET("/api/v1/jobs", { params: { query: jobListQuery(projectId, filters, offset) } })),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.items.some(isActive) ? POLL_MS : false),
  });
}

function invalidate(client: ReturnType<typeof useQueryClient>, what: Managed, projectId: string, id: string) {
  void client.invalidateQueries({ queryKey: keys.projects });
  void client.invalidateQueries({ queryKey: keys.project(projectId) });
  if (what === "model") {
    void client.invalidateQueries({ queryKey: keys.models(projectId) });
    void client.invalidateQueries({ queryKey: keys.model(id) });
  } else if (what === "dataset") {
    void client.invalidateQueries({ queryKey: keys.datasets(projectId) });
  } else {
    void client.invalidateQueries({ queryKey: keys.job(id) });
  }
  // Job rows name models and datasets, and deleting a model may delete nothing else but changes names.
  return client.invalidateQueries({ queryKey: keys.jobs(projectId) });
}

function patch(what: Managed, id: string, body: Changes): Promise<unknown> {
  if (what === "model")
    return unwrap(api.PATCH("/api/v1/models/{model_id}", { params: { path: { model_id: id } }, body }));
  if (what === "dataset")
    return unwrap(api.PATCH("/api/v1/datasets/{dataset_id}", { params: { path: { dataset_id: id } }, body }));
  return unwrap(api.PATCH("/api/v1/jobs/{job_id}", { params: { path: { job_id: id } }, body }));
}

function remove(what: Managed, id: string): Promise<void> {
  if (what === "model")
    return unwrapEmpty(api.DELETE("/api/v1/models/{model_id}", { params: { path: { model_id: id } } }));
  if (what === "dataset")
    return unwrapEmpty(api.DELETE("/api/v1/datasets/{dataset_id}", { params: { path: { dataset_id: id } } }));
  return unwrapEmpty(api.DELETE("/api/v1/jobs/{job_id}", { params: { path: { job_id: id } } }));
}

export function useUpdate(what: Managed, projectId: string, id: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Changes) => patch(what, id, body),
    onSuccess: () => invalidate(client, what, projectId, id),
  });
}

export function useDelete(what: Managed, projectId: string, id: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => remove(what, id),
    onSuccess: () => invalidate(client, what, projectId, id),
  });
}

export function useRelaunchJob(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (jobId: string) =>
      unwrap(api.POST("/api/v1/jobs/{job_id}/relaunch", { params: { path: { job_id: jobId } } })),
    onSuccess: () => invalidate(client, "job", projectId, ""),
  });
}
