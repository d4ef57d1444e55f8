import { useProject } from "../api/projects";
import { useCurrentUser } from "../auth/context";
import { canWrite, teamLabel } from "../auth/roles";
import { AlertsBadge, AlertsSection } from "../budgets/AlertsSection";
import { BudgetsSection } from "../budgets/BudgetsSection";
import { Layout } from "../components/Layout";
import { QueryView } from "../components/QueryView";
import { href } from "../lib/route";
import { DatasetsSection } from "../project/DatasetsSection";
import { JobsSection } from "../project/JobsSection";
import { LaunchForm } from "../project/LaunchForm";
import { ModelsSection } from "../project/ModelsSection";

export function ProjectPage({ projectId }: { projectId: string }) {
  const me = useCurrentUser();
  const project = useProject(projectId);
  const name = project.data?.name ?? "Project";
  return (
    <Layout
      crumbs={[{ label: "Projects", href: href({ page: "projects" }) }, { label: name }]}
      title={name}
      actions={
        <div className="header-actions">
          <AlertsBadge projectId={projectId} />
          <a className="button" href={href({ page: "compare", projectId })}>
            Compare runs
          </a>
        </div>
      }
    >
      <QueryView query={project} what="the project">
        {(p) => (
          <>
            {p.description && <p className="lead">{p.description}</p>}
            {!canWrite(me, p.team_id) && (
              <p className="note" role="note">
                You are a viewer in team {teamLabel(me, p.team_id)}: you can read everything here; uploading and
                launching jobs need the member role (ask a team admin).
              </p>
            )}
            <ModelsSection projectId={projectId} canUpload={canWrite(me, p.team_id)} />
            <DatasetsSection projectId={projectId} canUpload={canWrite(me, p.team_id)} />
            {canWrite(me, p.team_id) && <LaunchForm projectId={projectId} />}
            <JobsSection projectId={projectId} canCancel={canWrite(me, p.team_id)} />
            <AlertsSection projectId={projectId} canAcknowledge={canWrite(me, p.team_id)} />
            <BudgetsSection projectId={projectId} canEdit={canWrite(me, p.team_id)} />
          </>
        )}
      </QueryView>
    </Layout>
  );
}
