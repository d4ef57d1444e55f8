import type { PlotData } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { ChannelImportance } from "../api/types";
import { channelCsv, channelFigure } from "./sensitivityChannels";
import { REPORT } from "./sensitivityFixtures";

describe("channel importance", () => {
  const ci: ChannelImportance = {
    job_id: REPORT.job_id,
    layer: "conv2",
    method: "l1",
    unit: "l1 norm of the channel's weights",
    n_channels: 16,
    channels: [
      { channel: 6, rank: 0, score: 18.7 },
      { channel: 2, rank: 1, score: 17.5 },
      { channel: 12, rank: 2, score: null },
    ],
    error: null,
    notes: [],
  };

  it("draws one bar per channel, labelled by channel, most important first", () => {
    const { data, layout } = channelFigure(ci);
    const bars = data[0] as Partial<PlotData>;
    expect(bars.x).toEqual([0, 1, 2]);
    expect(bars.y).toEqual([18.7, 17.5, null]);
    expect(bars.customdata).toEqual([6, 2, 12]);
    expect(layout.xaxis?.ticktext).toEqual(["6", "2", "12"]);
  });

  it("drops per-bar labels for wide layers", () => {
    const wide = {
      ...ci,
      channels: Array.from({ length: 100 }, (_, i) => ({ channel: 99 - i, rank: i, score: 100 - i })),
    };
    expect(channelFigure(wide).layout.xaxis?.ticktext).toBeUndefined();
  });

  it("exports its scores", () => {
    expect(channelCsv(ci).rows[0]).toEqual(["conv2", "l1", 0, 6, 18.7]);
    expect(channelCsv({ ...ci, channels: undefined }).rows).toEqual([]);
  });
});
