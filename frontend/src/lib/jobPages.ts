// Where a job's results are shown, and the breadcrumbs of a job's page: shared by the report, sensitivity,
// sweep and recovery pages and the launch forms.
import type { Crumb } from "../components/Layout";
import { DEFAULT_SAMPLE_QUERY, DEFAULT_SENSITIVITY_QUERY, DEFAULT_SWEEP_QUERY, href } from "./route";

/** The page of a job of this kind (a fidelity job: its report), or null for kinds without one. */
export function jobPageHref(jobId: string, kind: string): string | null {
  if (kind === "fidelity") return href({ page: "report", jobId, query: DEFAULT_SAMPLE_QUERY });
  if (kind === "sensitivity") return href({ page: "sensitivity", jobId, query: DEFAULT_SENSITIVITY_QUERY });
  if (kind === "sweep") return href({ page: "sweep", jobId, query: DEFAULT_SWEEP_QUERY });
  if (kind === "recovery") return href({ page: "recovery", jobId });
  return null;
}

/** Projects › the job's project › `label`; the project has no link until the job says which it is. */
export function jobCrumbs(projectId: string, projectName: string | undefined, label: string): Crumb[] {
  return [
    { label: "Projects", href: href({ page: "projects" }) },
    { label: projectName ?? "Project", href: projectId ? href({ page: "project", projectId }) : undefined },
    { label },
  ];
}
