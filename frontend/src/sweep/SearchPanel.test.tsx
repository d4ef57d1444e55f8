import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { keys } from "../api/keys";
import type { Job } from "../api/types";
import { SearchPanel } from "./SearchPanel";

const SWEEP = "5eed0000-0000-4000-8000-000000000000";
const W2 = { type: "weight_quant", bits: 2, per_channel: true };
const W8 = { type: "weight_quant", bits: 8, per_channel: true };

const step = (k: number, index: number, value: number, holds: boolean, layers: string[]) => ({
  k,
  index,
  high_layers: layers,
  value,
  holds,
  reason: `k=${k.toString()}: top1_agreement ${value.toString()}`,
  seconds: 0.1,
  size_bytes: 1000 + 500 * k,
});

const summary = (met: boolean) => ({
  metric: "top1_agreement",
  threshold: 0.99,
  direction: "at_least",
  objective: "size",
  sensitivity_job_id: "scan",
  low: W2,
  high: W8,
  n: 3,
  rungs: [],
  steps: [
    step(0, 1, 0.57, false, []),
    step(3, 2, 1, met, ["fc", "conv2", "conv1"]),
    step(1, 3, 0.89, false, ["fc"]),
    step(2, 4, 0.983, false, ["fc", "conv2"]),
  ],
  met,
  k: met ? 3 : null,
  best_k: 3,
  best_value: 1,
  returned_index: 2,
  monotonic: true,
  max_steps: 4,
  seconds: 0.4,
  plan: { fc: "w8-sym-channel", conv2: "w8-sym-channel", conv1: "w8-sym-channel" },
  notes: ["steps are measured without export or timing; the returned plan is exported and timed"],
});

const render = (params: Record<string, unknown>, met = true) => {
  const client = new QueryClient();
  client.setQueryData([...keys.sweepPoints(SWEEP), "search"], summary(met));
  const job = { id: SWEEP, project_id: "p1", kind: "sweep", status: "succeeded", params } as unknown as Job;
  return renderToStaticMarkup(
    <QueryClientProvider client={client}>
      <SearchPanel job={job} onSelect={() => undefined} />
    </QueryClientProvider>,
  );
};

describe("SearchPanel", () => {
  it("shows nothing for a sweep launched without a search", () => {
    expect(render({})).toBe("");
  });

  it("lists the steps in measured order with the returned one highlighted", () => {
    const html = render({ search: { sensitivity_job_id: "scan" } });
    expect(html).toContain("Returned <strong>k = 3</strong> of 3");
    expect(html).toContain("top1_agreement ≥ 0.99");
    const ks = [
      ...html.matchAll(/<tr class="clickable[^"]*"[^>]*><td class="num">\d+<\/td><td class="num">(\d+)/g),
    ].map((m) => m[1]);
    expect(ks).toEqual(["0", "3", "1", "2"]);
    expect(html).toMatch(
      /<tr class="clickable selected" aria-current="true"><td class="num">2<\/td><td class="num">3 \(returned\)/,
    );
    expect(html).toContain("steps are measured without export or timing");
  });

  it("says when the threshold was not met and how close the best step came", () => {
    const html = render({ search: { sensitivity_job_id: "scan" } }, false);
    expect(html).toContain("<strong>Not met</strong>");
    expect(html).toContain("the closest, k = 3, measured 1");
    expect(html).toContain("3 (closest)");
  });
});
