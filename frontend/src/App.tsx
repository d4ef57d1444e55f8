import { useEffect } from "react";
import { Layout } from "./components/Layout";
import { useRoute } from "./components/router";
import { DEFAULT_COMPARE_QUERY, href, type Route } from "./lib/route";
import { ComparePage } from "./pages/ComparePage";
import { ModelPage } from "./pages/ModelPage";
import { ProjectPage } from "./pages/ProjectPage";
import { ProjectsPage } from "./pages/ProjectsPage";
import { ReportPage } from "./pages/ReportPage";
import { SensitivityPage } from "./pages/SensitivityPage";
import { SweepPage } from "./pages/SweepPage";

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "projects":
      return <ProjectsPage />;
    case "project":
      return <ProjectPage key={route.projectId} projectId={route.projectId} />;
    case "compare":
      return (
        <ComparePage key={route.projectId} projectId={route.projectId} query={route.query ?? DEFAULT_COMPARE_QUERY} />
      );
    case "model":
      return <ModelPage key={route.modelId} modelId={route.modelId} />;
    case "report":
      return <ReportPage key={route.jobId} jobId={route.jobId} query={route.query} />;
    case "sensitivity":
      return <SensitivityPage key={route.jobId} jobId={route.jobId} query={route.query} />;
    case "sweep":
      return <SweepPage key={route.jobId} jobId={route.jobId} query={route.query} />;
    case "notFound":
      return (
        <Layout crumbs={[{ label: "Projects", href: href({ page: "projects" }) }]} title="Page not found">
          <p>
            There is no page at <code>{route.path}</code>. <a href={href({ page: "projects" })}>Back to the projects</a>
            .
          </p>
        </Layout>
      );
  }
}

const TITLES: Record<Route["page"], string> = {
  projects: "Projects",
  project: "Project",
  compare: "Compare runs",
  model: "Model",
  report: "Fidelity report",
  sensitivity: "Sensitivity scan",
  sweep: "Sweep",
  notFound: "Not found",
};

export function App() {
  const route = useRoute();
  useEffect(() => {
    document.title = `${TITLES[route.page]} · Kneeboard`;
  }, [route.page]);
  return <Page route={route} />;
}
