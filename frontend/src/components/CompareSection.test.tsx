import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Job } from "../api/types";
import { CompareSection, JobPicker } from "./CompareSection";

const job = (id: string) =>
  ({ id, params: { model_id: `m-${id}`, dataset_id: "d", configs: [{}, {}] }, finished_at: null }) as unknown as Job;
const JOBS = [job("aaaaaaaa1"), job("bbbbbbbb2"), job("cccccccc3")];

const picker = (selected: string[], colors?: ReadonlyMap<string, string>) =>
  renderToStaticMarkup(
    <JobPicker
      legend="Jobs"
      jobs={JOBS}
      selected={selected}
      onChange={() => undefined}
      name={String}
      max={2}
      open={(j) => ({ href: `#/jobs/${j.id}`, label: `Open ${j.id.slice(0, 6)}` })}
      colors={colors}
    />,
  );

describe("JobPicker", () => {
  it("ticks the selected jobs and, at the most, disables the others", () => {
    const html = picker(["aaaaaaaa1", "bbbbbbbb2"]);
    expect(html.match(/<input type="checkbox" checked=""\/>/g)).toHaveLength(2);
    expect(html.match(/<input type="checkbox" disabled=""\/>/g)).toHaveLength(1);
    expect(html).toContain('<a class="small-text" href="#/jobs/cccccccc3" aria-label="Open cccccc">open</a>');
    expect(html).toContain("<strong>m-aaaaaaaa1</strong>");
    expect(html).toContain("2 configurations");
  });

  it("puts a swatch beside the ticked jobs only, when there are colours", () => {
    expect(picker(["aaaaaaaa1"])).not.toContain("swatch");
    const html = picker(["aaaaaaaa1"], new Map([["aaaaaaaa1", "red"]]));
    expect(html.match(/class="swatch"/g)).toHaveLength(1);
    expect(html).toContain('style="background:red"');
  });
});

const section = (jobs: { isPending: boolean; isError: boolean; error: unknown }, available: number, selected: number) =>
  renderToStaticMarkup(
    <CompareSection
      className="things"
      headingId="things-heading"
      title="Things"
      intro="What it shows."
      jobs={jobs}
      what="things"
      none="No things yet."
      available={available}
      picker={<fieldset />}
      selected={selected}
      tickOne="Tick at least one thing."
    >
      {() => <div>comparison</div>}
    </CompareSection>,
  );

describe("CompareSection", () => {
  const answered = { isPending: false, isError: false, error: null };
  it("shows the comparison under the picker once a job is ticked", () => {
    const html = section(answered, 3, 1);
    expect(html).toMatch(/^<section class="panel things" aria-labelledby="things-heading"><h2 id="things-heading">/);
    expect(html).toContain("<fieldset></fieldset><div>comparison</div>");
  });
  it("asks for a tick when none is ticked", () => {
    expect(section(answered, 3, 0)).toContain('<fieldset></fieldset><p class="empty">Tick at least one thing.</p>');
  });
  it("says there is nothing to compare, or the jobs are loading, or why they failed", () => {
    expect(section(answered, 0, 0)).toContain('<p class="empty">No things yet.</p>');
    expect(section(answered, 0, 0)).not.toContain("<fieldset>");
    expect(section({ isPending: true, isError: false, error: null }, 0, 0)).toContain("Loading things…");
    expect(section({ isPending: false, isError: true, error: new Error("down") }, 0, 0)).toContain(
      '<p class="error" role="alert">down</p>',
    );
  });
});
