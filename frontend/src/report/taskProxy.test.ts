import { describe, expect, it } from "vitest";
import {
  defaultMetric,
  disagreementText,
  rhoInWords,
  scatterSeries,
  strength,
  type ProxyPoint,
  type TaskMetricProxy,
} from "./taskProxy";

function metric(change: Partial<TaskMetricProxy>): TaskMetricProxy {
  return {
    metric: "wer_vs_golden",
    higher_is_better: false,
    n: 20,
    n_excluded: 0,
    n_exact: 0,
    spearman_rho: 0.62,
    p_value: 0.003,
    undefined: null,
    disagreements: [],
    ...change,
  };
}

describe("task proxy", () => {
  it("shows a per-sample change first, else the first metric", () => {
    expect(defaultMetric([metric({ metric: "wer_vs_golden" }), metric({ metric: "wer_delta" })])).toBe("wer_delta");
    expect(defaultMetric([metric({ metric: "iou_vs_golden" }), metric({ metric: "pixel_agreement" })])).toBe(
      "iou_vs_golden",
    );
    expect(defaultMetric([])).toBeNull();
  });

  it("states rho in words with its direction", () => {
    const strong = rhoInWords(metric({}), "kl");
    expect(strong).toContain("Spearman's rho = 0.62");
    expect(strong).toContain("a strong positive relation");
    expect(strong).toContain("higher wer_vs_golden");
    expect(strong).toContain("usable proxy");
    const iou = rhoInWords(metric({ metric: "iou_vs_golden", higher_is_better: true, spearman_rho: 0.2 }), "sqnr_db");
    expect(iou).toContain("lower iou_vs_golden");
    expect(iou).toContain("lower SQNR");
    expect(iou).toContain("rough guide");
    expect(rhoInWords(metric({ spearman_rho: -0.4 }), "kl")).toContain("A moderate inverse relation");
    expect(rhoInWords(metric({ spearman_rho: 0.05 }), "kl")).toContain("does not predict");
    const none = rhoInWords(
      metric({ spearman_rho: null, p_value: null, undefined: "the task value is constant" }),
      "kl",
    );
    expect(none).toContain("undefined: the task value is constant");
    expect(rhoInWords(metric({ n_excluded: 3, n_exact: 2 }), "sqnr_db")).toContain("3 left out");
  });

  it("grades strength by |rho|", () => {
    expect([0.05, 0.2, 0.4, 0.6, 0.9, -0.9].map(strength)).toEqual([
      "no",
      "a weak",
      "a moderate",
      "a strong",
      "a very strong",
      "a very strong",
    ]);
  });

  it("plots the samples with both values and counts the others", () => {
    const points: ProxyPoint[] = [
      { sample_index: 0, proxy: 12.5, proxy_infinite: false, values: { wer: 0.5 } },
      { sample_index: 1, proxy: null, proxy_infinite: true, values: { wer: 0 } },
      { sample_index: 2, proxy: 3, proxy_infinite: false, values: { wer: null } },
      { sample_index: 3, proxy: 8, proxy_infinite: false, values: { wer: 1 } },
    ];
    expect(scatterSeries(points, "wer")).toEqual({ x: [12.5, 8], y: [0.5, 1], index: [0, 3], unplotted: 2 });
  });

  it("says which way a sample disagrees", () => {
    expect(disagreementText(5)).toContain("task lost more");
    expect(disagreementText(-5)).toContain("diverged more");
  });
});
