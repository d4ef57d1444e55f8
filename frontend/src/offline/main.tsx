// The exported report (offline.html built into one file): the dashboard's own report, sensitivity or sweep
// page, its API calls answered from the document embedded in the file, so nothing is fetched from a network.
// The page's view (sorting, selected layer, axes) lives in the URL fragment as on the dashboard.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { api } from "../api/http";
import { useRoute } from "../components/router";
import { DEFAULT_SAMPLE_QUERY, DEFAULT_SENSITIVITY_QUERY, DEFAULT_SWEEP_QUERY } from "../lib/route";
import { formatTime } from "../lib/format";
import { ReportPage } from "../pages/ReportPage";
import { SensitivityPage } from "../pages/SensitivityPage";
import { SweepPage } from "../pages/SweepPage";
import "../styles.css";
import { answer, parseDocument, type ReportDocument } from "./answer";
import { samplesNote } from "./banner";
import { enterOfflineMode } from "./mode";
import "./offline.css";

function Page({ doc }: { doc: ReportDocument }) {
  const route = useRoute();
  const jobId = doc.job_id;
  const same = "jobId" in route && route.jobId === jobId;
  switch (doc.kind) {
    case "fidelity":
      return <ReportPage jobId={jobId} query={same && route.page === "report" ? route.query : DEFAULT_SAMPLE_QUERY} />;
    case "sensitivity":
      return (
        <SensitivityPage
          jobId={jobId}
          query={same && route.page === "sensitivity" ? route.query : DEFAULT_SENSITIVITY_QUERY}
        />
      );
    case "sweep":
      return <SweepPage jobId={jobId} query={same && route.page === "sweep" ? route.query : DEFAULT_SWEEP_QUERY} />;
  }
}

function Banner({ doc }: { doc: ReportDocument }) {
  const note = samplesNote(doc);
  return (
    <p className="offline-banner" role="note">
      Offline copy of a Kneeboard {doc.kind} report, exported {formatTime(doc.exported_at)}: the numbers as stored then;
      nothing is fetched from a network.
      {note && ` ${note}`}
    </p>
  );
}

const root = document.getElementById("root");
if (!root) throw new Error("offline.html has no #root element");
try {
  const doc = parseDocument(document.getElementById("kb-report")?.textContent);
  enterOfflineMode();
  api.use({
    onRequest({ request }) {
      const { status, body } = answer(doc, request.method, request.url);
      return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
    },
  });
  const queryClient = new QueryClient({
    defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false, staleTime: Infinity } },
  });
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <Banner doc={doc} />
        <Page doc={doc} />
      </QueryClientProvider>
    </StrictMode>,
  );
} catch (error) {
  root.textContent = `This Kneeboard report cannot be shown: ${error instanceof Error ? error.message : String(error)}`;
}
