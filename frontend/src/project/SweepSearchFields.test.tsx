import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Job } from "../api/types";
import { NO_SEARCH } from "../lib/sweepSearch";
import { SweepSearchFields } from "./SweepSearchFields";

const scan = { id: "abcdef00-0000-4000-8000-000000000000", finished_at: null } as unknown as Job;

const render = (chosen: string) =>
  renderToStaticMarkup(
    <SweepSearchFields model="m1" scans={[scan]} value={{ ...NO_SEARCH, scan: chosen }} onChange={() => undefined} />,
  );

describe("SweepSearchFields", () => {
  it("offers the model's scans and keeps the other fields off until one is chosen", () => {
    const html = render("");
    expect(html).toContain(">No search</option>");
    expect(html).toContain("scan abcdef");
    expect(html.match(/disabled=""/g)?.length).toBe(5);
    expect(render(scan.id).match(/disabled=""/g)).toBeNull();
  });

  it("keeps descriptions out of the labels (browser drivers find fields by label substrings)", () => {
    const html = render(scan.id);
    const labels = [...html.matchAll(/<label>([^<]*)</g)].map((m) => m[1]);
    expect(labels).toEqual([
      "Scan ranking the layers",
      "Metric to hold",
      "Threshold value",
      "Direction",
      "Aggressive config",
      "Returned layers at",
    ]);
    expect(html).toMatch(/<select aria-describedby="[^"]+-about"/);
    expect(html).toContain("from the metric (at least)");
  });
});
