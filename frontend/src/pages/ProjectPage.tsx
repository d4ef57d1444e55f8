import { useProject } from "../api/queries";
import { Layout } from "../components/Layout";
import { QueryView } from "../components/QueryView";
import { href } from "../lib/route";
import { DatasetsSection } from "../project/DatasetsSection";
import { JobsSection } from "../project/JobsSection";
import { LaunchForm } from "../project/LaunchForm";
import { ModelsSection } from "../project/ModelsSection";

export function ProjectPage({ projectId }: { projectId: string }) {
  const project = useProject(projectId);
  const name = project.data?.name ?? "Project";
  return (
    <Layout
      crumbs={[{ label: "Projects", href: href({ page: "projects" }) }, { label: name }]}
      title={name}
      actions={
        <a className="button" href={href({ page: "compare", projectId })}>
          Compare runs
        </a>
      }
    >
      <QueryView query={project} what="the project">
        {(p) => (
          <>
            {p.description && <p className="lead">{p.description}</p>}
            <ModelsSection projectId={projectId} />
            <DatasetsSection projectId={projectId} />
            <LaunchForm projectId={projectId} />
            <JobsSection projectId={projectId} />
          </>
        )}
      </QueryView>
    </Layout>
  );
}
