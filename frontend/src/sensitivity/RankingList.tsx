// Layers most sensitive first, overall (mean over the configurations) or for one configuration. The first
// few are listed; "show all" lists every layer (a few hundred buttons at most). A click selects the layer.
import { useMemo, useState } from "react";
import type { SensitivityReport } from "../api/types";
import { slug, toCsv } from "../lib/csv";
import { downloadText } from "../lib/download";
import { shortName } from "../lib/layerProfile";
import { proxyMetric } from "../lib/sensitivity";
import { formatScore, rankedLayers, rankingCsv } from "../lib/sensitivityRanking";
import { layerIsExact } from "./screening";

const FIRST = 15;

export function RankingList({
  report,
  config,
  selected,
  onConfig,
  onSelect,
}: {
  report: SensitivityReport;
  config: string | null;
  selected: string | null;
  onConfig: (config: string | null) => void;
  onSelect: (layer: string) => void;
}) {
  const [all, setAll] = useState(false);
  const ranked = useMemo(() => rankedLayers(report, config), [report, config]);
  const metric = proxyMetric(report);
  const shown = all ? ranked : ranked.slice(0, FIRST);
  const allBut = report.mode === "all_but";
  const download = () => {
    const { header, rows } = rankingCsv(report, config);
    downloadText(`${slug(`ranking ${report.mode} ${config ?? "overall"}`)}.csv`, toCsv(header, rows));
  };
  return (
    <section className="panel ranking" aria-labelledby="ranking-heading">
      <div className="chart-head">
        <h3 id="ranking-heading">Most sensitive layers</h3>
        <button type="button" className="small" onClick={download} aria-label="Download the ranking as CSV">
          CSV
        </button>
      </div>
      <label className="inline">
        Ranking
        <select
          value={config ?? ""}
          onChange={(e) => {
            onConfig(e.target.value || null);
          }}
        >
          <option value="">overall (mean)</option>
          {report.matrix.columns.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </label>
      <p className="muted small-text">
        {allBut
          ? "Keeping the layer in float while everything else is compressed: the lower the damage, the higher the rank."
          : metric === "kl"
            ? "By KL mean with the layer alone compressed, highest first."
            : "By output SQNR with the layer alone compressed, lowest first."}
      </p>
      <ol className="ranked scroll-y" aria-label="Layers, most sensitive first">
        {shown.map((r) => (
          <li key={r.name}>
            <button
              type="button"
              className={r.name === selected ? "ranked-layer selected" : "ranked-layer"}
              aria-pressed={r.name === selected}
              data-layer={r.name}
              onClick={() => {
                onSelect(r.name);
              }}
            >
              <span className="ranked-rank">{r.rank}</span>
              <span className="ranked-name" title={r.name}>
                <code>{shortName(r.name, 32)}</code>
                <span className="small-text">
                  <span className="muted">{r.type}</span> ·{" "}
                  <span className="ranked-score">{formatScore(metric, r.score)}</span>
                  {!layerIsExact(report, r.name, config) && (
                    <>
                      {" "}
                      <span className="badge badge-muted" title="Estimated by screening, not measured">
                        est.
                      </span>
                    </>
                  )}
                </span>
              </span>
            </button>
          </li>
        ))}
      </ol>
      {ranked.length > FIRST && (
        <button
          type="button"
          className="link"
          onClick={() => {
            setAll(!all);
          }}
        >
          {all ? `Show the first ${FIRST.toString()}` : `Show all ${ranked.length.toLocaleString("en-US")} layers`}
        </button>
      )}
    </section>
  );
}
