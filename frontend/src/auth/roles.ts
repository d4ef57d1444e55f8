// Roles in a team, lowest first: viewer (reads), member (uploads, launches; cancels and deletes their own),
// admin (manages members, reads the audit trail, deletes anything). The API enforces them; the dashboard
// uses these helpers only to hide the controls a role cannot use.
import type { Me, Role, TeamRole } from "../api/types";

export const ROLES: readonly Role[] = ["viewer", "member", "admin"];

export const ROLE_HELP: Record<Role, string> = {
  viewer: "reads the team's projects",
  member: "uploads and launches; cancels and deletes their own jobs",
  admin: "manages members, reads the audit trail, deletes anything",
};

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2 };

/** Whether `role` (null: not in the team) is `needed` or higher. */
export function atLeast(role: Role | null | undefined, needed: Role): boolean {
  return role != null && RANK[role] >= RANK[needed];
}

/** The user's role in a team; null when they are not in it. */
export function roleIn(me: Pick<Me, "teams">, teamId: string): Role | null {
  return me.teams.find((t) => t.id === teamId)?.role ?? null;
}

/** Whether the user may upload, launch and create projects in a team. */
export function canWrite(me: Pick<Me, "teams">, teamId: string): boolean {
  return atLeast(roleIn(me, teamId), "member");
}

/** The teams where the user may create projects (member or admin), in the order the API listed them. */
export function writableTeams(me: Pick<Me, "teams">): TeamRole[] {
  return me.teams.filter((t) => atLeast(t.role, "member"));
}

/** A team's name as the user knows it; a short id for a team they are not in. */
export function teamLabel(me: Pick<Me, "teams">, teamId: string): string {
  return me.teams.find((t) => t.id === teamId)?.name ?? `team ${teamId.slice(0, 8)}`;
}
