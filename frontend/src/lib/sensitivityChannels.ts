// The channel importance of one layer (GET /jobs/{id}/sensitivity/channels): figure and CSV.
import type { Data, Layout } from "plotly.js";
import type { ChannelImportance } from "../api/types";
import type { Cell } from "./csv";
import { shortName } from "./layerProfile";
import { escapeHtml, finite } from "./sensitivity";

// ---------------------------------------------------------------------------------------------------------
// Channel importance

/** Channels labelled by their index below the bars up to this many. */
export const MAX_LABELLED_CHANNELS = 32;

/** One bar per channel, most important first; the bar's label is the channel's index. */
export function channelFigure(ci: ChannelImportance): { data: Data[]; layout: Partial<Layout> } {
  const channels = ci.channels ?? [];
  const labelled = channels.length <= MAX_LABELLED_CHANNELS;
  const unit = ci.unit ?? ci.method;
  return {
    data: [
      {
        type: "bar",
        name: ci.method,
        x: channels.map((c) => c.rank),
        y: channels.map((c) => (finite(c.score) ? c.score : null)),
        customdata: channels.map((c) => c.channel),
        marker: { color: "#4c78a8" },
        hovertemplate: `channel %{customdata}<br>rank %{x}<br>${escapeHtml(unit)}: %{y:.4g}<extra></extra>`,
      },
    ],
    layout: {
      bargap: 0.15,
      xaxis: labelled
        ? {
            title: { text: "channel (most important first)" },
            tickvals: channels.map((c) => c.rank),
            ticktext: channels.map((c) => c.channel.toString()),
            tickangle: 0,
          }
        : { title: { text: "rank (0 = most important; hover for the channel)" } },
      yaxis: { title: { text: shortName(unit, 40) } },
      margin: { l: 60, r: 20, t: 10, b: 50 },
    },
  };
}

export function channelCsv(ci: ChannelImportance): { header: string[]; rows: Cell[][] } {
  return {
    header: ["layer", "method", "rank", "channel", "score"],
    rows: (ci.channels ?? []).map((c) => [ci.layer, ci.method, c.rank, c.channel, c.score]),
  };
}

/** The server returns at most this many channels of a layer (the most important ones). */
export const CHANNEL_LIMIT = 512;
