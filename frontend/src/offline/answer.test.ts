import { describe, expect, it } from "vitest";
import type { Sample } from "../api/types";
import { answer, parseDocument, sampleCoverage, sortSamples, type ReportDocument } from "./answer";

const JOB = "0b6c8d2e-0000-4000-8000-000000000001";

function sample(i: number, kl: number | null, flagged: boolean, top1: boolean, golden = 0, compressed = 0): Sample {
  return {
    sample_index: i,
    output_name: "logits",
    kl,
    cosine: 1,
    mse: kl,
    sqnr_db: 10,
    top1_match: top1,
    golden_class: golden,
    compressed_class: compressed,
    label: 0,
    flagged,
    finite: true,
    sqnr_db_infinite: false,
  };
}

const rows = [
  sample(0, 0.5, true, false, 1, 2),
  sample(1, null, false, true),
  sample(2, 0.1, false, true),
  sample(3, 0.9, true, false, 1, 2),
  sample(4, 0.1, false, true),
];

const doc: ReportDocument = {
  format: 1,
  kind: "fidelity",
  job_id: JOB,
  exported_at: "2026-12-04T16:00:00+00:00",
  responses: { [`/api/v1/jobs/${JOB}`]: { id: JOB, kind: "fidelity" } },
  errors: { [`/api/v1/jobs/${JOB}/fidelity/layers`]: { status: 404, detail: "ran without a layer profile" } },
  samples: { logits: { rows, total: 9 } },
  frontiers: { "size_bytes:min,kl_mean:min": { frontier: [] } },
};

const point = (index: number, kl: number) => ({
  id: `${JOB}:${String(index)}`,
  job_id: JOB,
  index,
  label: `cfg-${String(index)}`,
  objectives: { kl_mean: kl, size_bytes: 100 * index },
  point: { fidelity: { kl_mean: kl } },
});

const indexes = (body: unknown) => (body as { items: Sample[] }).items.map((s) => s.sample_index);

describe("the offline report's answers", () => {
  it("serves stored documents by path, from any origin (a file:// page, a Windows drive)", () => {
    for (const url of [`file:///api/v1/jobs/${JOB}`, `file:///C:/api/v1/jobs/${JOB}`, `/api/v1/jobs/${JOB}`]) {
      expect(answer(doc, "GET", url)).toEqual({ status: 200, body: { id: JOB, kind: "fidelity" } });
    }
  });

  it("answers the API's error where the API answered one, 404 for what the file lacks, 405 for writes", () => {
    expect(answer(doc, "GET", `/api/v1/jobs/${JOB}/fidelity/layers`)).toEqual({
      status: 404,
      body: { detail: "ran without a layer profile" },
    });
    expect(answer(doc, "GET", "/api/v1/models/x").status).toBe(404);
    expect(answer(doc, "GET", "https://cdn.example/x.js").status).toBe(404);
    expect(answer(doc, "POST", `/api/v1/jobs/${JOB}`).status).toBe(405);
  });

  it("sorts per-sample rows as the API does: the column with nulls last either way, then the index", () => {
    expect(sortSamples(rows, "kl", "desc").map((s) => s.sample_index)).toEqual([3, 0, 2, 4, 1]);
    expect(sortSamples(rows, "kl", "asc").map((s) => s.sample_index)).toEqual([2, 4, 0, 3, 1]);
    const tasked = rows.map((r, n) => ({ ...r, task_values: { wer: n === 1 ? null : (n * 7) % 5 } }));
    expect(sortSamples(tasked, "task:wer", "desc").map((s) => s.sample_index)).toEqual([2, 4, 3, 0, 1]);
    expect(sortSamples(tasked, "task:wer", "asc").map((s) => s.sample_index)).toEqual([0, 3, 4, 2, 1]);
  });

  it("filters and pages the samples", () => {
    const base = `/api/v1/jobs/${JOB}/fidelity/samples?output=logits`;
    const flagged = answer(doc, "GET", `${base}&flagged=true&sort=kl&order=desc`);
    expect(indexes(flagged.body)).toEqual([3, 0]);
    expect(indexes(answer(doc, "GET", `${base}&flipped=false&sort=sample_index&order=asc`).body)).toEqual([1, 2, 4]);
    const second = answer(doc, "GET", `${base}&sort=sample_index&order=asc&limit=2&offset=2`).body;
    expect(second).toMatchObject({ total: 5, limit: 2, offset: 2 });
    expect(indexes(second)).toEqual([2, 3]);
    expect(answer(doc, "GET", `/api/v1/jobs/${JOB}/fidelity/samples?output=other`).status).toBe(404);
  });

  it("lists the samples worst-first by a task metric in the metric's direction, undefined values last", () => {
    const values = [0.5, null, 0.9, 0.1, 0.5];
    const withTask: ReportDocument = {
      ...doc,
      responses: {
        ...doc.responses,
        [`/api/v1/jobs/${JOB}/fidelity/task`]: {
          proxy_output: "logits",
          metrics: [
            { metric: "iou", higher_is_better: true },
            { metric: "wer", higher_is_better: false },
          ],
        },
      },
      samples: {
        logits: {
          rows: rows.map((r, i) => ({ ...r, task_values: { iou: values[i] ?? null, wer: values[i] ?? null } })),
          total: 5,
        },
      },
    };
    const list = (query: string) =>
      indexes(answer(withTask, "GET", `/api/v1/jobs/${JOB}/fidelity/task/samples?${query}`).body);
    expect(list("metric=iou")).toEqual([3, 0, 4, 2, 1]);
    expect(list("metric=wer")).toEqual([2, 0, 4, 3, 1]);
    expect(list("metric=wer&order=best")).toEqual([3, 0, 4, 2, 1]);
    expect(answer(withTask, "GET", `/api/v1/jobs/${JOB}/fidelity/task/samples?metric=nope`).status).toBe(404);
  });

  it("lists a confusion cell's samples, highest KL first", () => {
    const cell = answer(doc, "GET", `/api/v1/jobs/${JOB}/fidelity/classes/samples?golden_class=1&compressed_class=2`);
    expect(indexes(cell.body)).toEqual([3, 0]);
  });

  it("serves unbounded frontiers by their objectives and refuses bounds", () => {
    const url = `/api/v1/sweep-frontier?job_ids=${JOB}&objective=size_bytes%3Amin&objective=kl_mean%3Amin`;
    expect(answer(doc, "GET", url)).toEqual({ status: 200, body: { frontier: [] } });
    expect(answer(doc, "GET", `${url}&bound=kl_mean%3C%3D0.1`).status).toBe(404);
    expect(answer(doc, "GET", `/api/v1/sweep-frontier?objective=kl_mean%3Amax`).status).toBe(404);
  });

  it("rebuilds a compact frontier's points from the embedded points, knee marked", () => {
    const sweep: ReportDocument = {
      ...doc,
      kind: "sweep",
      responses: { [`/api/v1/jobs/${JOB}/sweep/points`]: { items: [point(0, 0.5), point(1, 0.2), point(2, 0.1)] } },
      frontiers: { "kl_mean:min": { frontier_ids: [`${JOB}:2`, `${JOB}:1`], knee: `${JOB}:1`, n_points: 3 } },
    };
    const served = answer(sweep, "GET", `/api/v1/sweep-frontier?job_ids=${JOB}&objective=kl_mean%3Amin`).body;
    expect(served).toEqual({
      knee: `${JOB}:1`,
      n_points: 3,
      frontier: [
        { id: `${JOB}:2`, job_id: JOB, index: 2, label: "cfg-2", objectives: point(2, 0.1).objectives, knee: false },
        { id: `${JOB}:1`, job_id: JOB, index: 1, label: "cfg-1", objectives: point(1, 0.2).objectives, knee: true },
      ],
    });
  });

  it("answers the inspector for the embedded samples, and says which ones it holds for the others", () => {
    const inspection = { job_id: JOB, index: 3, input: [{ name: "x", thumbnail: "data:image/png;base64,AAAA" }] };
    const withInspector: ReportDocument = {
      ...doc,
      responses: { ...doc.responses, [`/api/v1/jobs/${JOB}/samples/3`]: inspection },
      inspections: { indices: [3, 0], max: 50, pictures_left_out: 0 },
    };
    expect(answer(withInspector, "GET", `file:///api/v1/jobs/${JOB}/samples/3`)).toEqual({
      status: 200,
      body: inspection,
    });
    const other = answer(withInspector, "GET", `/api/v1/jobs/${JOB}/samples/2`);
    expect(other.status).toBe(404);
    expect((other.body as { detail: string }).detail).toMatch(
      /#2 is not inspectable.*2 samples with the largest KL \(#3, #0\)/,
    );
    const none = answer(
      { ...doc, inspections: { indices: [], max: 50, pictures_left_out: 0 } },
      "GET",
      `/api/v1/jobs/${JOB}/samples/2`,
    );
    expect((none.body as { detail: string }).detail).toMatch(/none of its samples/);
  });

  it("reads the embedded document and says when there is none", () => {
    expect(parseDocument(JSON.stringify(doc)).job_id).toBe(JOB);
    expect(() => parseDocument("null")).toThrow(/no Kneeboard report/);
    expect(() => parseDocument(JSON.stringify({ ...doc, kind: "recovery" }))).toThrow(/unknown report kind/);
    expect(sampleCoverage(doc)).toEqual({ held: 5, total: 9 });
  });
});
