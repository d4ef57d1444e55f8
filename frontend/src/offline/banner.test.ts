import { describe, expect, it } from "vitest";
import type { Sample } from "../api/types";
import type { ReportDocument } from "./answer";
import { samplesNote } from "./banner";

const row = (i: number) => ({ sample_index: i }) as Sample;
const rows = (n: number) => Array.from({ length: n }, (_, i) => row(i));

function doc(held: number, total: number, inspections?: ReportDocument["inspections"]): ReportDocument {
  return {
    format: 1,
    kind: "fidelity",
    job_id: "j",
    exported_at: "2026-12-07T05:50:00Z",
    responses: {},
    errors: {},
    samples: { logits: { rows: rows(held), total } },
    ...(inspections ? { inspections } : {}),
  };
}

const fifty = { indices: Array.from({ length: 50 }, (_, i) => 359 - i), max: 50, pictures_left_out: 0 };

describe("the offline banner's sentences about samples", () => {
  it("says the table holds all 360 samples, and that 50 of them are inspectable here (the demo's case)", () => {
    const note = samplesNote(doc(360, 360, fifty));
    expect(note).toMatch(
      /^The per-sample histogram and table hold all 360 samples\. Of these, the 50 with the largest KL/,
    );
    expect(note).toContain("The others open on the dashboard.");
  });

  it("says how many of how many the file holds when it holds fewer than the job has", () => {
    expect(samplesNote(doc(2050, 5000, { ...fifty, pictures_left_out: 3 }))).toMatch(
      /^The per-sample histogram and table hold 2,050 of 5,000 samples \(the first by index, and the worst by KL\)\. Of these, the 50 with the largest KL open in the inspector here when their row is clicked \(3 without their picture/,
    );
  });

  it("says when nothing is inspectable, and nothing about samples for a report without them", () => {
    expect(samplesNote(doc(10, 10, { indices: [], max: 50, pictures_left_out: 0 }))).toBe(
      "The per-sample histogram and table hold all 10 samples. Inspecting a sample needs the dashboard: this file holds no inspections.",
    );
    expect(samplesNote({ ...doc(0, 0), kind: "sweep", samples: undefined })).toBe("");
  });
});
