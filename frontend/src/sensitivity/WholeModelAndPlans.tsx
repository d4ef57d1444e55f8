// Each configuration applied to every layer at once (the whole-model row), and the mixed-precision plans:
// the bit-width per layer that minimises the predicted KL under a size budget, with the KL measured when the
// whole plan is applied.
import { Fragment, useMemo, useState } from "react";
import { useMixedPrecisionPlans } from "../api/sensitivity";
import { RecoverPlanButton } from "../recovery/RecoverButton";
import type { SensitivityReport } from "../api/types";
import { ChartPanel, type CsvData } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { slug, toCsv } from "../lib/csv";
import { downloadText } from "../lib/download";
import { formatBytes, formatNumber, formatPercent } from "../lib/format";
import { formatKl } from "../lib/sensitivity";
import { planRows, plansCsv, plansFigure, wholeModelCsv, wholeModelRows, type PlanRow } from "../lib/sensitivityPlans";

function CsvButton({ name, csv }: { name: string; csv: () => CsvData }) {
  return (
    <button
      type="button"
      className="small"
      aria-label={`Download ${name} as CSV`}
      onClick={() => {
        const { header, rows } = csv();
        downloadText(`${slug(name)}.csv`, toCsv(header, rows));
      }}
    >
      CSV
    </button>
  );
}

export function WholeModelTable({ report }: { report: SensitivityReport }) {
  const rows = useMemo(() => wholeModelRows(report), [report]);
  if (rows.length === 0) return null;
  const worst = Math.max(...rows.map((r) => r.klMean ?? Number.NEGATIVE_INFINITY));
  return (
    <section className="panel" aria-labelledby="whole-model-heading">
      <div className="chart-head">
        <h3 id="whole-model-heading">Whole model</h3>
        <CsvButton name="whole model" csv={() => wholeModelCsv(rows)} />
      </div>
      <p className="muted small-text">Each configuration applied to every layer at once.</p>
      <div className="scroll">
        <table className="table compact" aria-labelledby="whole-model-heading">
          <thead>
            <tr>
              <th>Configuration</th>
              <th className="num">Weight bits</th>
              <th className="num">KL mean</th>
              <th className="num">KL max</th>
              <th className="num">Top-1 agreement</th>
              <th className="num">SQNR</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>
                  <code>{r.id}</code> <span className="muted small-text">{r.description}</span>
                </td>
                <td className="num">{r.weightBits ?? "—"}</td>
                <td className={`num${r.klMean === worst && rows.length > 1 ? " flip" : ""}`}>{formatKl(r.klMean)}</td>
                <td className="num">{formatKl(r.klMax)}</td>
                <td className="num">{formatPercent(r.top1)}</td>
                <td className="num">
                  {r.sqnrInfinite ? "∞ dB" : r.sqnr === null ? "—" : `${formatNumber(r.sqnr)} dB`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Assignments({ plan }: { plan: PlanRow }) {
  const [open, setOpen] = useState(false);
  if (plan.assignments.length === 0) return <>—</>;
  const counts = new Map<string, number>();
  for (const a of plan.assignments) counts.set(a.config, (counts.get(a.config) ?? 0) + 1);
  return (
    <>
      {[...counts].map(([config, n], i) => (
        <Fragment key={config}>
          {i > 0 && ", "}
          <code>{config}</code> × {n}
        </Fragment>
      ))}{" "}
      <button
        type="button"
        className="link small-text"
        aria-expanded={open}
        onClick={() => {
          setOpen(!open);
        }}
      >
        {open ? "hide layers" : "per layer"}
      </button>
      {open && (
        <ul className="plain assignments scroll-y small-text">
          {plan.assignments.map((a) => (
            <li key={a.layer}>
              <code>{a.layer}</code>: {a.config}
              {a.bits !== null && <span className="muted"> ({a.bits} bits)</span>}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

export function PlansSection({ jobId }: { jobId: string }) {
  const plans = useMixedPrecisionPlans(jobId, true);
  const rows = useMemo(() => planRows(plans.data?.plans ?? []), [plans.data]);
  const figure = useMemo(() => plansFigure(rows), [rows]);
  return (
    <section className="panel" aria-labelledby="plans-heading">
      <div className="chart-head">
        <h3 id="plans-heading">Mixed-precision plans</h3>
        {rows.length > 0 && <CsvButton name="mixed precision plans" csv={() => plansCsv(rows)} />}
      </div>
      <p className="muted small-text">
        A bit-width per layer minimising the predicted KL (the sum of the layers&apos; KL when compressed alone) under
        the size of the average bit-width; then measured with the whole plan applied.
      </p>
      {plans.isPending ? (
        <Loading what="the plans" />
      ) : plans.isError ? (
        <ErrorMessage error={plans.error} />
      ) : rows.length === 0 ? (
        <Empty>No plans: the job ran without mixed_precision_bits.</Empty>
      ) : (
        <>
          <div className="scroll">
            <table className="table compact plans" aria-labelledby="plans-heading">
              <thead>
                <tr>
                  <th className="num">Average bits</th>
                  <th className="num">Budget</th>
                  <th className="num">Size</th>
                  <th className="num">Predicted KL</th>
                  <th className="num">Measured KL</th>
                  <th className="num">Measured top-1</th>
                  <th className="num">Measured SQNR</th>
                  <th>Assignments</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.averageBits}>
                    <td className="num">{formatNumber(r.averageBits)}</td>
                    {r.error ? (
                      <td colSpan={7} className="error">
                        {r.error}
                      </td>
                    ) : (
                      <>
                        <td className="num">{formatBytes(r.budgetBytes)}</td>
                        <td className="num">{formatBytes(r.sizeBytes)}</td>
                        <td className="num">{formatKl(r.predictedKl)}</td>
                        <td className="num">{formatKl(r.measuredKl)}</td>
                        <td className="num">{formatPercent(r.measuredTop1)}</td>
                        <td className="num">{r.measuredSqnr === null ? "—" : `${formatNumber(r.measuredSqnr)} dB`}</td>
                        <td>
                          <Assignments plan={r} />
                          <RecoverPlanButton scanJobId={jobId} averageBits={r.averageBits} />
                          {r.notes.map((n) => (
                            <div key={n} className="muted small-text">
                              {n}
                            </div>
                          ))}
                        </td>
                      </>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {rows.some((r) => r.error === null && (r.predictedKl ?? 0) > 0) && (
            <ChartPanel
              title="Predicted vs measured KL"
              csv={() => plansCsv(rows)}
              caption="Predicted: the sum of each layer's KL compressed alone (assumes the errors add up). Measured: every layer compressed by the plan at once."
            >
              <Plot data={figure.data} layout={figure.layout} filename="mixed-precision-plans" height={260} />
            </ChartPanel>
          )}
        </>
      )}
    </section>
  );
}
