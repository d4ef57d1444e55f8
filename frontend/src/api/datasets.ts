// A project's datasets, a preview of a dataset's samples and a sample's thumbnail link.
import { useQuery } from "@tanstack/react-query";
import type { paths } from "../client/schema";
import { api, unwrap } from "./http";
import { keys } from "./keys";

export function useDatasets(projectId: string) {
  return useQuery({
    queryKey: keys.datasets(projectId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/projects/{project_id}/datasets", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
  });
}

/** A preview of a dataset's samples (statistics per array, labels, whether a thumbnail can be drawn). */
export function useDatasetSamples(datasetId: string, offset: number, limit: number, enabled = true) {
  return useQuery({
    queryKey: ["dataset-samples", datasetId, offset, limit] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/datasets/{dataset_id}/samples", {
          params: { path: { dataset_id: datasetId }, query: { offset, limit } },
        }),
      ),
    enabled: enabled && datasetId !== "",
    // A stored dataset never changes.
    staleTime: Infinity,
  });
}

const THUMBNAIL_PATH = "/api/v1/datasets/{dataset_id}/samples/{index}/thumbnail.png" satisfies keyof paths;

/** The path of one sample's PNG thumbnail (longest side 128 px), for an <img> or a link. */
export const thumbnailHref = (datasetId: string, index: number): string =>
  THUMBNAIL_PATH.replace("{dataset_id}", encodeURIComponent(datasetId)).replace("{index}", index.toString());
