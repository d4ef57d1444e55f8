// Projects: the list, one project, creating one.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./http";
import { keys } from "./keys";

export function useProjects() {
  return useQuery({
    queryKey: keys.projects,
    queryFn: () => unwrap(api.GET("/api/v1/projects")),
  });
}

export function useProject(projectId: string) {
  return useQuery({
    queryKey: keys.project(projectId),
    queryFn: () => unwrap(api.GET("/api/v1/projects/{project_id}", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
  });
}

export function useCreateProject() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string; description: string; team_id?: string | null }) =>
      unwrap(api.POST("/api/v1/projects", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projects }),
  });
}
