import { useEffect } from "react";
import { ApiError } from "./api/http";
import { useMe } from "./api/auth";
import { MeContext } from "./auth/context";
import { endReason, signedIn, useSessionState } from "./auth/session";
import { HealthBanner } from "./components/HealthBanner";
import { Layout } from "./components/Layout";
import { ErrorMessage, Loading } from "./components/QueryView";
import { useRoute } from "./components/router";
import { DEFAULT_COMPARE_QUERY, href, type Route } from "./lib/route";
import { AccountPage } from "./pages/AccountPage";
import { ComparePage } from "./pages/ComparePage";
import { ModelPage } from "./pages/ModelPage";
import { ProjectPage } from "./pages/ProjectPage";
import { ProjectsPage } from "./pages/ProjectsPage";
import { RecoveryPage } from "./pages/RecoveryPage";
import { ReportPage } from "./pages/ReportPage";
import { SensitivityPage } from "./pages/SensitivityPage";
import { SignInPage } from "./pages/SignInPage";
import { SweepPage } from "./pages/SweepPage";
import { TeamPage } from "./pages/TeamPage";
import { UsersPage } from "./pages/UsersPage";

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "projects":
      return <ProjectsPage />;
    case "account":
      return <AccountPage />;
    case "users":
      return <UsersPage />;
    case "team":
      return <TeamPage key={route.teamId} teamId={route.teamId} query={route.query} />;
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
    case "recovery":
      return <RecoveryPage key={route.jobId} jobId={route.jobId} />;
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
  account: "Account",
  users: "Users",
  team: "Team",
  project: "Project",
  compare: "Compare runs",
  model: "Model",
  report: "Fidelity report",
  sensitivity: "Sensitivity scan",
  sweep: "Sweep",
  recovery: "Recovery",
  notFound: "Not found",
};

/**
 * Asks who is signed in first. Nobody (or a 401 from any call later: the session ended) shows the sign-in
 * page in place of the page, keeping the hash route, so that signing in lands on the same permalink.
 */
export function App() {
  const route = useRoute();
  const session = useSessionState();
  const me = useMe();
  const signInNeeded = session === "ended" || (me.error instanceof ApiError && me.error.status === 401);
  useEffect(() => {
    if (me.data) signedIn();
  }, [me.data]);
  useEffect(() => {
    document.title = `${signInNeeded ? "Sign in" : TITLES[route.page]} · Kneeboard`;
  }, [route.page, signInNeeded]);
  if (signInNeeded) return <SignInPage reason={endReason()} />;
  if (me.isPending)
    return (
      <Layout crumbs={[]} title="Kneeboard">
        <Loading what="your account" />
      </Layout>
    );
  if (me.isError)
    return (
      <Layout crumbs={[]} title="Kneeboard">
        <ErrorMessage error={me.error} />
        <button
          type="button"
          onClick={() => {
            void me.refetch();
          }}
        >
          Try again
        </button>
      </Layout>
    );
  return (
    <MeContext value={me.data}>
      <HealthBanner />
      <Page route={route} />
    </MeContext>
  );
}
