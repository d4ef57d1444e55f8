// The open (unacknowledged) budget alerts where a user lands, not only in a project's header (issue 35): per
// project on the projects list, and their total in the app header, linking to the first project that has some.
// Both read the projects list's open_alerts_count (one request, whatever the number of projects).
import { useProjects } from "../api/projects";
import type { Project } from "../api/types";
import { href } from "../lib/route";
import "./budgets.css";

const alerts = (n: number) => `${n.toString()} open alert${n === 1 ? "" : "s"}`;

/** How many alerts are open across the projects, and the first project (in the list's order) that has any. */
export function openAlertsSummary(projects: readonly Pick<Project, "id" | "name" | "open_alerts_count">[]): {
  total: number;
  first: Pick<Project, "id" | "name"> | null;
} {
  const total = projects.reduce((sum, p) => sum + p.open_alerts_count, 0);
  return { total, first: projects.find((p) => p.open_alerts_count > 0) ?? null };
}

/** A project's open alerts as a badge that opens the project (nothing while there are none). */
export function ProjectAlertsBadge({ project }: { project: Pick<Project, "id" | "name" | "open_alerts_count"> }) {
  const n = project.open_alerts_count;
  if (n === 0) return null;
  return (
    <a
      className="badge badge-bad alerts-badge"
      href={href({ page: "project", projectId: project.id })}
      aria-label={`${alerts(n)} in ${project.name}: open the project`}
    >
      {alerts(n)}
    </a>
  );
}

/** The total in the app header: a badge that opens the first project with open alerts. */
export function HeaderAlertsBadge() {
  const projects = useProjects();
  const { total, first } = openAlertsSummary(projects.data ?? []);
  if (total === 0 || first === null) return null;
  return (
    <a
      className="badge badge-bad alerts-badge"
      href={href({ page: "project", projectId: first.id })}
      aria-label={`${alerts(total)} across your projects: open ${first.name}`}
      title={`Budget alerts nobody has acknowledged; the first is in ${first.name}`}
    >
      {alerts(total)}
    </a>
  );
}
