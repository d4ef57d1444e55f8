import { describe, expect, it } from "vitest";
import type { SensitivityReport } from "../api/types";
import { REPORT } from "./sensitivityFixtures";
import { rankingOf } from "./sensitivityRanking";
import { largerIsWorse, taskMatrixCsv, taskMetricNames, taskRanking } from "./sensitivityTaskMatrix";

// the fixture's three layers scored on segmentation: conv2 loses the most mIoU, fc the least
const TASK: SensitivityReport = {
  ...REPORT,
  ranking_metric: "task.miou_drop",
  task: "segmentation",
  rank_by: "miou_drop",
  matrix: {
    ...REPORT.matrix,
    task_metrics: {
      miou_vs_golden: [
        [0.9, 0.7, 1, 0.8],
        [0.5, 0.4, 1, 0.6],
        [0.95, 0.9, null, 0.97],
      ],
      miou_drop: [
        [0.02, 0.1, 0, 0.05],
        [0.3, 0.4, 0, 0.2],
        [0.01, 0.02, null, 0.01],
      ],
    },
  },
  ranking: { overall: ["conv2", "conv1", "fc"], by_config: { ...REPORT.ranking.by_config } },
};

describe("task sensitivity", () => {
  it("lists the ranked metric first and knows which way each runs", () => {
    expect(taskMetricNames(TASK)).toEqual(["miou_drop", "miou_vs_golden"]);
    expect(taskMetricNames(REPORT)).toEqual([]);
    expect(largerIsWorse("miou_drop")).toBe(true);
    expect(largerIsWorse("miou_vs_golden")).toBe(false);
  });

  it("ranks the largest drop and the smallest agreement first, with the measured numbers", () => {
    const overall = taskRanking(TASK, "miou_drop", null);
    expect(overall.map((r) => r.name)).toEqual(["conv2", "conv1", "fc"]);
    expect(overall[0]?.value).toBeCloseTo((0.3 + 0.4 + 0 + 0.2) / 4, 12);
    expect(overall[2]?.value).toBeCloseTo((0.01 + 0.02 + 0.01) / 3, 12); // the unmeasured fp16 cell left out
    expect(taskRanking(TASK, "miou_vs_golden", "w8-sym-tensor").map((r) => r.name)).toEqual(["conv2", "conv1", "fc"]);
    expect(taskRanking(TASK, "miou_drop", "fp16").map((r) => r.value)).toEqual([0, 0, null]);
  });

  it("keeps the KL views on KL when the API ranked by the task", () => {
    // the API's overall order is the task's; the KL heatmap's ranking is by the cells' mean KL (conv1 4.9e-3,
    // fc 3.7e-3, conv2 8.8e-4 nats), not the task's
    expect(rankingOf(TASK, null)).toEqual(["conv1", "fc", "conv2"]);
    expect(rankingOf(TASK, null)).not.toEqual(TASK.ranking.overall);
  });

  it("writes every task cell in the CSV", () => {
    const { header, rows } = taskMatrixCsv(TASK);
    expect(header).toEqual(["mode", "layer", "config", "metric", "value"]);
    expect(rows).toHaveLength(2 * 3 * 4);
    expect(rows[4]).toEqual(["only", "conv2", "w8-sym-tensor", "miou_drop", 0.3]);
  });
});
