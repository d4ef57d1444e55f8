import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { HealthBanner, HealthProblems } from "./HealthBanner";

const NO_WORKER = "no worker is running: jobs will wait";

describe("HealthProblems", () => {
  it("shows nothing when nothing keeps jobs from running", () => {
    expect(renderToStaticMarkup(<HealthProblems problems={[]} />)).toBe("");
  });

  it("shows each problem the API names, as an alert", () => {
    const html = renderToStaticMarkup(<HealthProblems problems={[NO_WORKER, "the reaper's last 3 rounds failed"]} />);
    expect(html).toBe(
      `<div class="error" role="alert"><p>${NO_WORKER}</p><p>the reaper&#x27;s last 3 rounds failed</p></div>`,
    );
  });
});

describe("HealthBanner", () => {
  it("shows the problems of the health answer", () => {
    const client = new QueryClient();
    client.setQueryData(["health"], { status: "ok", database: "ok", workers: [], problems: [NO_WORKER] });
    const html = renderToStaticMarkup(
      <QueryClientProvider client={client}>
        <HealthBanner />
      </QueryClientProvider>,
    );
    expect(html).toContain(NO_WORKER);
  });
});
