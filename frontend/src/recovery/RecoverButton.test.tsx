import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { keys } from "../api/keys";
import { RecoverButton } from "./RecoverButton";

const SWEEP = "5eed0000-0000-4000-8000-000000000000";
const POINT = `${SWEEP}:5`;

const job = (id: string, kind: string, status: string, params: Record<string, unknown>) => ({
  id,
  project_id: "p1",
  kind,
  status,
  params,
  progress: 0.4,
  progress_message: "AdaRound: fc",
  eta_s: status === "running" ? 130 : null,
  error: status === "failed" ? "the worker ran out of memory" : null,
});

/** The sweep page's point 5 with the server answering `recoveries` for GET /jobs?sweep_point_id=<point>. */
const render = (recoveries: ReturnType<typeof job>[]) => {
  const client = new QueryClient();
  client.setQueryData(keys.job(SWEEP), job(SWEEP, "sweep", "succeeded", { model_id: "m1", dataset_id: "d1" }));
  client.setQueryData(keys.model("m1"), { id: "m1", format: "torch_export", status: "ready" });
  client.setQueryData([...keys.jobs("p1"), "sweep-point", POINT], {
    items: recoveries,
    total: recoveries.length,
    limit: 20,
    offset: 0,
  });
  for (const r of recoveries) client.setQueryData(keys.job(r.id), r);
  return renderToStaticMarkup(
    <QueryClientProvider client={client}>
      <RecoverButton sweepJobId={SWEEP} index={5} />
    </QueryClientProvider>,
  );
};

const params = { sweep_point_id: POINT, methods: [{ name: "adaround" }] };

describe("RecoverButton on a sweep point", () => {
  it("offers 'Recover this' when the server lists no recovery of the point", () => {
    const html = render([]);
    expect(html).toContain(">Recover this</button>");
    expect(html).not.toContain("was recovered");
  });

  it("says the point was recovered, links the recovery's page and offers to recover again (after a reload too)", () => {
    const html = render([job("r2", "recovery", "succeeded", params), job("r1", "recovery", "failed", params)]);
    expect(html).toContain('data-recovery-state="succeeded"');
    expect(html).toContain('This point was recovered (<a href="#/jobs/r2/recovery">its page</a>).');
    expect(html).toContain("Loading the recovery result");
    expect(html).toContain(">Recover again</button>");
    expect(html).not.toContain(">Recover this</button>");
  });

  it("shows a running recovery's progress and no launch button", () => {
    const html = render([job("r3", "recovery", "running", params)]);
    expect(html).toContain("A recovery of this point is running");
    expect(html).toContain("Recovering… AdaRound: fc");
    expect(html).toContain('<progress max="1" value="0.4" aria-label="Recovery progress">');
    expect(html).toContain("40 %");
    expect(html).toContain("about 2 min left");
    expect(html).not.toContain("</button>");
  });

  it("says why the last recovery failed, and offers to recover again", () => {
    const html = render([job("r1", "recovery", "failed", params)]);
    expect(html).toContain("did not succeed: the worker ran out of memory");
    expect(html).toContain(">Recover again</button>");
  });
});
