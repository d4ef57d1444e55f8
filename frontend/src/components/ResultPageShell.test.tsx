import { QueryClient, QueryClientProvider, type UseQueryResult } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Job } from "../api/types";
import type { JobOfKind } from "./JobPage";
import { ResultPageShell } from "./ResultPageShell";

const job = (kind: string, status: string) =>
  ({
    id: "j1",
    project_id: "p1",
    kind,
    status,
    params: {},
    progress: 0.5,
    progress_message: "",
    error: null,
  }) as unknown as Job;

const page = (data: Job | undefined, succeeded: boolean): JobOfKind => ({
  jobId: "j1",
  kind: "sweep",
  job: { isPending: data === undefined, isError: false, error: null, data } as unknown as UseQueryResult<Job>,
  succeeded,
  projectId: data ? "p1" : "",
  projectName: "Demo",
});

const render = (p: JobOfKind, downloadable?: boolean) =>
  renderToStaticMarkup(
    <QueryClientProvider client={new QueryClient()}>
      <ResultPageShell
        page={p}
        crumb="Sweep"
        title="Sweep of m"
        compare={{ label: "Compare sweeps", href: (projectId) => `#/projects/${projectId}/compare` }}
        facts={(j) => <dl className="facts">{j.id}</dl>}
        expected="a sweep"
        noun="sweep"
        results="the chart appears when it succeeds"
        after={() => <p>chunks</p>}
        downloadable={downloadable}
      >
        {() => <p>results</p>}
      </ResultPageShell>
    </QueryClientProvider>,
  );

describe("ResultPageShell", () => {
  it("shows a succeeded job's facts, results and what comes after, with the download and compare buttons", () => {
    const html = render(page(job("sweep", "succeeded"), true));
    expect(html).toContain("<h1>Sweep of m</h1>");
    expect(html).toContain('<a class="button" href="#/projects/p1/compare">Compare sweeps</a>');
    expect(html).toContain("Download report (HTML)");
    expect(html).toContain('<dl class="facts">j1</dl><p>results</p><p>chunks</p>');
  });

  it("offers no download for a kind the HTML export does not serve (a recovery job)", () => {
    const html = render(page(job("sweep", "succeeded"), true), false);
    expect(html).toContain("<p>results</p>");
    expect(html).not.toContain("Download report");
  });

  it("says when the job has not succeeded yet, and still shows what comes after", () => {
    const html = render(page(job("sweep", "running"), false));
    expect(html).toContain("This sweep is running; the chart appears when it succeeds.");
    expect(html).not.toContain("<p>results</p>");
    expect(html).not.toContain("Download report");
    expect(html).toContain("<p>chunks</p>");
  });

  it("says when the job is of another kind, with nothing after", () => {
    const html = render(page(job("fidelity", "succeeded"), false));
    expect(html).toContain("Job j1 is a fidelity job, not a sweep.");
    expect(html).not.toContain("<p>chunks</p>");
  });

  it("shows the job loading, without the compare button until the project is known", () => {
    const html = render(page(undefined, false));
    expect(html).toContain("Loading the job…");
    expect(html).not.toContain("Compare sweeps");
  });
});
