// Server state of a project's fidelity budgets and alerts.
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, unwrapEmpty } from "../api/http";
import { keys } from "../api/keys";
import type { components } from "../client/schema";

export type Budget = components["schemas"]["BudgetOut"];
export type BudgetInput = components["schemas"]["BudgetIn"];
export type Alert = components["schemas"]["AlertOut"];

export const ALERTS_PAGE = 20;
/** Alerts come from a background check seconds after a job finishes: poll for new ones. */
export const ALERTS_POLL_MS = 10_000;

export const budgetKeys = {
  budgets: (projectId: string) => ["budgets", projectId] as const,
  alerts: (projectId: string) => ["alerts", projectId] as const,
};

const path = (projectId: string) => ({ params: { path: { project_id: projectId } } });

export function useBudgets(projectId: string) {
  return useQuery({
    queryKey: budgetKeys.budgets(projectId),
    queryFn: () => unwrap(api.GET("/api/v1/projects/{project_id}/budgets", path(projectId))),
  });
}

export function useSaveBudget(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, body }: { id: string | null; body: BudgetInput }) =>
      id === null
        ? unwrap(api.POST("/api/v1/projects/{project_id}/budgets", { ...path(projectId), body }))
        : unwrap(
            api.PUT("/api/v1/projects/{project_id}/budgets/{budget_id}", {
              params: { path: { project_id: projectId, budget_id: id } },
              body,
            }),
          ),
    onSuccess: () => client.invalidateQueries({ queryKey: budgetKeys.budgets(projectId) }),
  });
}

export function useDeleteBudget(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: string) =>
      unwrapEmpty(
        api.DELETE("/api/v1/projects/{project_id}/budgets/{budget_id}", {
          params: { path: { project_id: projectId, budget_id: id } },
        }),
      ),
    onSettled: () => client.invalidateQueries({ queryKey: budgetKeys.budgets(projectId) }),
  });
}

export function useAlerts(projectId: string, unacknowledged: boolean, offset: number) {
  return useQuery({
    queryKey: [...budgetKeys.alerts(projectId), unacknowledged, offset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/projects/{project_id}/alerts", {
          params: { path: { project_id: projectId }, query: { unacknowledged, limit: ALERTS_PAGE, offset } },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: ALERTS_POLL_MS,
  });
}

export function useAcknowledgeAlert(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (alertId: string) =>
      unwrap(
        api.POST("/api/v1/projects/{project_id}/alerts/{alert_id}/ack", {
          params: { path: { project_id: projectId, alert_id: alertId } },
        }),
      ),
    onSettled: async () => {
      // the badges where a user lands (projects list, app header) count from the projects' open_alerts_count
      await Promise.all([
        client.invalidateQueries({ queryKey: budgetKeys.alerts(projectId) }),
        client.invalidateQueries({ queryKey: keys.projects }),
        client.invalidateQueries({ queryKey: keys.project(projectId) }),
      ]);
    },
  });
}
