import { useDatasets } from "../api/datasets";
import { useModels } from "../api/models";

/** Looks up model and dataset names by id within a project; falls back to a short id. */
export function useNames(projectId: string): (id: unknown) => string {
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  const names = new Map<string, string>([...models, ...datasets].map((row) => [row.id, row.name]));
  return (id) => (typeof id === "string" ? (names.get(id) ?? `${id.slice(0, 8)}…`) : "?");
}
