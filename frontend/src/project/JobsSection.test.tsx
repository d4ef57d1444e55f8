import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Job } from "../api/types";
import { JobSubject } from "./JobsSection";

const NAMES: Record<string, string> = { g1: "digits-cnn", d1: "digits test" };
const name = (id: unknown) => (typeof id === "string" ? (NAMES[id] ?? "?") : "?");

const job = (kind: string, params: Record<string, unknown>) => ({ id: "j1", kind, params }) as unknown as Job;

describe("JobSubject", () => {
  it("names a recovery job's methods, the model it recovers, what it recovers and its dataset", () => {
    const html = renderToStaticMarkup(
      <JobSubject
        job={job("recovery", {
          golden_model_id: "g1",
          dataset_id: "d1",
          sweep_point_id: "0f1e2d3c-0000-4000-8000-000000000000:2",
          methods: [{ name: "adaround", iterations: 40 }, { name: "bias_correction" }],
        })}
        name={name}
      />,
    );
    const text = html.replace(/<[^>]+>/g, "");
    expect(text).toBe("AdaRound → Bias correction on digits-cnn · point 2 of sweep 0f1e2d3c · on digits test");
    expect(html).not.toContain("—");
  });

  it("still has the dash for a kind it has no words for", () => {
    expect(renderToStaticMarkup(<JobSubject job={job("robustness_probe", {})} name={name} />)).toContain("—");
  });
});
