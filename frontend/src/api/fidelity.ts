// A fidelity job's report, per-layer profile and per-sample divergences; a project's fidelity runs.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { SampleQuery } from "../lib/route";
import { api, unwrap } from "./http";
import { keys } from "./keys";
import type { Sample } from "./types";

export function useFidelityReport(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.report(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

/** The per-layer profile of a fidelity job; a 404 ApiError when the job ran with layer_profile=false. */
export function useLayerProfile(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.layers(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/layers", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

const tristate = (value: SampleQuery["flagged"]): boolean | undefined =>
  value === "any" ? undefined : value === "yes";

export function useSamples(jobId: string, output: string, query: SampleQuery) {
  const { sort, task_metric, order, flagged, flipped, limit, offset } = query;
  return useQuery({
    queryKey: [...keys.samples(jobId), output, sort, task_metric, order, flagged, flipped, limit, offset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/fidelity/samples", {
          params: {
            path: { job_id: jobId },
            query: {
              output,
              sort,
              task_metric: task_metric ?? undefined,
              order,
              flagged: tristate(flagged),
              flipped: tristate(flipped),
              limit,
              offset,
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The server's largest page of samples. */
const SAMPLE_PAGE_MAX = 1000;

/**
 * Per-sample values for the histogram: the first `max` samples by index, fetched page by page, and how many
 * there are in all (more than `max` means the histogram shows a sample of them).
 */
export function useSampleValues(jobId: string, output: string, max: number) {
  return useQuery({
    queryKey: [...keys.samples(jobId), output, "values", max],
    queryFn: async () => {
      const items: Sample[] = [];
      for (;;) {
        const page: { items: Sample[]; total: number } = await unwrap(
          api.GET("/api/v1/jobs/{job_id}/fidelity/samples", {
            params: {
              path: { job_id: jobId },
              query: {
                output,
                sort: "sample_index",
                order: "asc",
                limit: Math.min(SAMPLE_PAGE_MAX, max - items.length),
                offset: items.length,
              },
            },
          }),
        );
        items.push(...page.items);
        if (page.items.length === 0 || items.length >= Math.min(page.total, max)) return { items, total: page.total };
      }
    },
    staleTime: Infinity,
  });
}

/** The runs where a model is the compressed side (newest first, at most 50). */
export function useRunsAsCompressed(projectId: string, modelId: string) {
  return useQuery({
    queryKey: [...keys.runs(projectId), "compressed", modelId],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/projects/{project_id}/fidelity-runs", {
          params: { path: { project_id: projectId }, query: { compressed_model_id: modelId, limit: 50 } },
        }),
      ),
  });
}

export function useFidelityRuns(projectId: string, filters: { golden: string; dataset: string }) {
  return useQuery({
    queryKey: [...keys.runs(projectId), filters.golden, filters.dataset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/projects/{project_id}/fidelity-runs", {
          params: {
            path: { project_id: projectId },
            query: {
              golden_model_id: filters.golden || undefined,
              dataset_id: filters.dataset || undefined,
              limit: 500,
            },
          },
        }),
      ),
  });
}
