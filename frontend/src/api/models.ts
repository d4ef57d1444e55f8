// A project's models and one model, polled while an inspection is still running.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./http";
import { keys } from "./keys";
import { POLL_MS } from "./polling";
import type { Model } from "./types";

const anyInspecting = (models: Model[] | undefined): boolean => !!models?.some((m) => m.status === "inspecting");

export function useModels(projectId: string) {
  return useQuery({
    queryKey: keys.models(projectId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/projects/{project_id}/models", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
    refetchInterval: (query) => (anyInspecting(query.state.data) ? POLL_MS : false),
  });
}

export function useModel(modelId: string) {
  return useQuery({
    queryKey: keys.model(modelId),
    queryFn: () => unwrap(api.GET("/api/v1/models/{model_id}", { params: { path: { model_id: modelId } } })),
    refetchInterval: (query) => (query.state.data?.status === "inspecting" ? POLL_MS : false),
  });
}
