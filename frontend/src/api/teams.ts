// Teams: creating one, a team and its members, adding, re-roling and removing members.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, unwrapEmpty } from "./http";
import { authKeys } from "./keys";
import type { Role } from "./types";

/** Creates a team (the user becomes its admin); `me` lists it afterwards. */
export function useCreateTeam() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string }) => unwrap(api.POST("/api/v1/teams", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.me }),
  });
}

export function useTeam(teamId: string) {
  return useQuery({
    queryKey: authKeys.team(teamId),
    queryFn: () => unwrap(api.GET("/api/v1/teams/{team_id}", { params: { path: { team_id: teamId } } })),
  });
}

export function useMembers(teamId: string) {
  return useQuery({
    queryKey: authKeys.members(teamId),
    queryFn: () => unwrap(api.GET("/api/v1/teams/{team_id}/members", { params: { path: { team_id: teamId } } })),
  });
}

/** After a membership change: the members, the audit trail, and the user's own teams and roles. */
function useMembershipChanged(teamId: string) {
  const client = useQueryClient();
  return () =>
    Promise.all([
      client.invalidateQueries({ queryKey: authKeys.members(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.audit(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.team(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.me }),
    ]);
}

export function useAddMember(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: (body: { username: string; role: Role }) =>
      unwrap(api.POST("/api/v1/teams/{team_id}/members", { params: { path: { team_id: teamId } }, body })),
    onSuccess: changed,
  });
}

export function useChangeRole(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: Role }) =>
      unwrap(
        api.PATCH("/api/v1/teams/{team_id}/members/{user_id}", {
          params: { path: { team_id: teamId, user_id: userId } },
          body: { role },
        }),
      ),
    onSettled: changed,
  });
}

/** Removes a member (team admins), or the user themself (leaving the team). */
export function useRemoveMember(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: (userId: string) =>
      unwrapEmpty(
        api.DELETE("/api/v1/teams/{team_id}/members/{user_id}", {
          params: { path: { team_id: teamId, user_id: userId } },
        }),
      ),
    onSuccess: changed,
  });
}
