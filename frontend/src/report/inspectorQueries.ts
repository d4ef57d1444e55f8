// Server state of the sample inspector (backend/api/routes/sample_inspector.py), kept beside its panel.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import type { components } from "../client/schema";

export type SampleInspection = components["schemas"]["SampleInspectionOut"];
export type OutputTopK = components["schemas"]["OutputTopKOut"];

/** One sample of a fidelity job: metrics, both models' top-k, its input. A 404 ApiError for a job run before
 * the top-k were stored (the message says so) or an index past the end. */
export function useSampleInspection(jobId: string, index: number | null) {
  return useQuery({
    queryKey: ["sample-inspection", jobId, index],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/samples/{index}", {
          params: { path: { job_id: jobId, index: index ?? 0 } },
        }),
      ),
    enabled: index !== null,
    staleTime: Infinity, // a finished job's results never change
    retry: false,
  });
}

export type TaskSample =
  | components["schemas"]["DetectionSampleOut"]
  | components["schemas"]["CtcSampleOut"]
  | components["schemas"]["SegmentationSampleOut"]
  | components["schemas"]["ImageOutputSampleOut"]
  | components["schemas"]["SignalSampleOut"];

/** One sample's task predictions (a detector's boxes, a speech model's transcripts, a segmenter's label
 * maps, an image output's pictures, a signal's waveforms); asked for only when the
 * report lists `task_samples` (other jobs answer 404). */
export function useTaskSample(jobId: string, index: number | null, enabled: boolean) {
  return useQuery({
    queryKey: ["sample-task", jobId, index],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/samples/{index}/task", {
          params: { path: { job_id: jobId, index: index ?? 0 } },
        }),
      ),
    enabled: enabled && index !== null,
    staleTime: Infinity,
    retry: false,
  });
}
