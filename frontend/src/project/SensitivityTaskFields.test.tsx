import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { taskScanCost } from "../lib/sensitivityTask";
import { NO_SCAN_TASK, SensitivityTaskFields } from "./SensitivityTaskFields";

// the two properties of SensitivityJobParams' schema the fields read, as the API writes them
const SCHEMA = {
  properties: {
    task: { enum: ["auto", "segmentation", "detection"], description: "The task every cell is also scored on." },
    rank_by: {
      "x-task-metrics": {
        segmentation: { "task.miou_drop": "min", "task.miou_vs_golden": "max" },
        detection: { "task.map50_drop": "min" },
      },
    },
  },
};

const render = (task: string, rankBy: string) =>
  renderToStaticMarkup(
    <SensitivityTaskFields
      schema={SCHEMA}
      value={{ ...NO_SCAN_TASK, task, rankBy }}
      cost={taskScanCost({ task, rankBy, layers: 3, configs: 2, samples: 64, allBut: false })}
      onChange={() => undefined}
    />,
  );

describe("SensitivityTaskFields", () => {
  it("offers no ranking and states no cost without a task", () => {
    const html = render("auto", "");
    expect(html).toContain("KL (classifiers) or SQNR of the primary output");
    expect(html).not.toContain('role="note"');
  });

  it("offers the task's metrics, worst first, and shows the cost of ranking by one before launch", () => {
    const html = render("detection", "task.map50_drop");
    expect(html).toContain(">mAP@.5 drop (largest first)</option>");
    expect(html).toContain(
      "Ranking by mAP@.5 drop runs the whole model for each of 6 cells (3 layers × 2 configurations): ≈ 6 forward passes of 64 samples, instead of reusing the golden prefix.",
    );
    expect(render("segmentation", "")).toContain("(smallest first)</option>");
  });
});
