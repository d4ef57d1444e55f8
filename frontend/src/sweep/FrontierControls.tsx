// The controls of a Pareto chart, shared by the sweep page and the compare page: the objective of each axis
// with its direction (lower or higher is better) and log scale, and the bounds (max KL, min top-1 agreement,
// max size, max latency, max run-time memory, one task metric) as a slider with a number field each
// (BoundControl.tsx). Bounds reach the URL — and so the frontier query — once the user stops moving them.
import { useId } from "react";
import { BoundControl } from "./BoundControl";
import { bytesUnit } from "./units";
import { value, type SweepRow } from "../lib/sweep";
import { canLog } from "../lib/sweepAxes";
import { NO_BOUNDS, type Bounds } from "../lib/sweepBounds";
import { axisLabel, latencyObjective, objectiveInfo, type Direction } from "../lib/sweepObjectives";
import type { SweepQuery, SweepView } from "../lib/sweepQuery";

function AxisPicker({
  side,
  available,
  name,
  direction,
  log,
  logPossible,
  onChange,
}: {
  side: "x" | "y";
  available: readonly string[];
  name: string;
  direction: Direction;
  log: boolean;
  logPossible: boolean;
  onChange: (change: { name?: string; direction?: Direction; log?: boolean }) => void;
}) {
  const id = useId();
  return (
    <fieldset className="axis-picker">
      <legend>{side === "x" ? "Horizontal axis (x)" : "Vertical axis (y)"}</legend>
      <label className="visually-hidden" htmlFor={`${id}-objective`}>
        {side} objective
      </label>
      <select
        id={`${id}-objective`}
        value={name}
        onChange={(e) => {
          onChange({ name: e.target.value });
        }}
      >
        {available.map((n) => (
          <option key={n} value={n}>
            {axisLabel(n)}
          </option>
        ))}
      </select>
      <label className="visually-hidden" htmlFor={`${id}-direction`}>
        {side} direction
      </label>
      <select
        id={`${id}-direction`}
        value={direction}
        title="Which way is better on the frontier"
        onChange={(e) => {
          onChange({ direction: e.target.value === "max" ? "max" : "min" });
        }}
      >
        <option value="min">lower is better</option>
        <option value="max">higher is better</option>
      </select>
      <label className="inline" title={logPossible ? undefined : "Only for values that are never negative"}>
        <input
          type="checkbox"
          checked={log && logPossible}
          disabled={!logPossible}
          onChange={(e) => {
            onChange({ log: e.target.checked });
          }}
        />
        {side} log
      </label>
    </fieldset>
  );
}

/** The x and y pickers; a change of objective resets that axis' direction and scale to the objective's own. */
export function AxisPickers({
  available,
  rows,
  view,
  query,
  onChange,
}: {
  available: readonly string[];
  rows: readonly SweepRow[];
  view: SweepView;
  query: SweepQuery;
  onChange: (change: Partial<SweepQuery>) => void;
}) {
  const logOf = (name: string, wanted: boolean | null) => wanted ?? objectiveInfo(name).log;
  const possible = (name: string) => canLog(rows.map((r) => value(r, name)));
  return (
    <div className="axis-pickers">
      <AxisPicker
        side="x"
        available={available}
        name={view.x}
        direction={view.xDir}
        log={logOf(view.x, query.xLog)}
        logPossible={possible(view.x)}
        onChange={(c) => {
          if (c.name !== undefined) onChange({ x: c.name, xDir: null, xLog: null });
          if (c.direction !== undefined)
            onChange({ xDir: c.direction === objectiveInfo(view.x).direction ? null : c.direction });
          if (c.log !== undefined) onChange({ xLog: c.log === objectiveInfo(view.x).log ? null : c.log });
        }}
      />
      <AxisPicker
        side="y"
        available={available.filter((n) => n !== view.x)}
        name={view.y}
        direction={view.yDir}
        log={logOf(view.y, query.yLog)}
        logPossible={possible(view.y)}
        onChange={(c) => {
          if (c.name !== undefined) onChange({ y: c.name, yDir: null, yLog: null });
          if (c.direction !== undefined)
            onChange({ yDir: c.direction === objectiveInfo(view.y).direction ? null : c.direction });
          if (c.log !== undefined) onChange({ yLog: c.log === objectiveInfo(view.y).log ? null : c.log });
        }}
      />
    </div>
  );
}

/** The four bounds that apply to these points, and the latency batch size. */
export function BoundsControls({
  rows,
  available,
  view,
  onChange,
}: {
  rows: readonly SweepRow[];
  available: readonly string[];
  view: SweepView;
  onChange: (change: Partial<SweepQuery>) => void;
}) {
  const values = (name: string) => rows.map((r) => value(r, name));
  const set = (key: keyof Bounds) => (v: number | null) => {
    onChange({ bounds: { ...view.bounds, [key]: v } });
  };
  const latency = view.batch === null ? null : latencyObjective(view.batch);
  const sizeUnit = bytesUnit(values("size_bytes"));
  const any = Object.values(view.bounds).some((v) => v !== null);
  return (
    <div className="bounds" role="group" aria-labelledby="bounds-heading">
      <div className="chart-head">
        <h3 id="bounds-heading">Constraints</h3>
        <button
          type="button"
          className="small"
          disabled={!any}
          onClick={() => {
            // the task metric stays named, so that a bound the sweep launched with is not put back
            onChange({ bounds: NO_BOUNDS, taskMetric: view.taskMetric });
          }}
        >
          Clear all
        </button>
      </div>
      <p className="muted small-text">
        Only points within every bound compete for the frontier; the others are faded. Empty: no bound.
      </p>
      {available.includes("kl_mean") && (
        <BoundControl
          label="Max KL mean (nats)"
          side="max"
          value={view.bounds.maxKl}
          values={values("kl_mean")}
          log
          onChange={set("maxKl")}
        />
      )}
      {available.includes("top1_agreement") && (
        <BoundControl
          label="Min top-1 agreement (%)"
          side="min"
          value={view.bounds.minTop1}
          values={[...values("top1_agreement"), 1]}
          log={false}
          unit={0.01}
          onChange={set("minTop1")}
        />
      )}
      {available.includes("size_bytes") && (
        <BoundControl
          label={`Max size (${sizeUnit.name})`}
          side="max"
          value={view.bounds.maxSize}
          values={values("size_bytes")}
          log
          unit={sizeUnit.bytes}
          describe={(v) => `${Math.round(v).toLocaleString("en-US")} bytes`}
          onChange={set("maxSize")}
        />
      )}
      {available.includes("runtime_memory_mib") && (
        <BoundControl
          label="Max run-time memory (MiB)"
          side="max"
          value={view.bounds.maxMemory}
          values={values("runtime_memory_mib")}
          log={false}
          onChange={set("maxMemory")}
        />
      )}
      {latency !== null && (
        <>
          <BoundControl
            label={`Max latency p50 @ batch ${String(view.batch)} (ms)`}
            side="max"
            value={view.bounds.maxLatency}
            values={values(latency)}
            log={false}
            onChange={set("maxLatency")}
          />
          {view.batches.length > 1 && (
            <label className="inline">
              Latency batch size
              <select
                value={view.batch ?? ""}
                onChange={(e) => {
                  onChange({ batch: Number(e.target.value) });
                }}
              >
                {view.batches.map((b) => (
                  <option key={b} value={b}>
                    {b}
                  </option>
                ))}
              </select>
            </label>
          )}
        </>
      )}
      {latency === null && (
        <p className="muted small-text">No latency was measured (the sweep ran with latency off).</p>
      )}
      <TaskBound rows={rows} available={available} view={view} onChange={onChange} />
    </div>
  );
}

/** A bound on one of the points' task metrics (mAP drop, WER change...), on its acceptable side: at most for a
 * metric where lower is better, at least otherwise. A sweep launched with a task bound opens with it here. */
function TaskBound({
  rows,
  available,
  view,
  onChange,
}: {
  rows: readonly SweepRow[];
  available: readonly string[];
  view: SweepView;
  onChange: (change: Partial<SweepQuery>) => void;
}) {
  const metrics = available.filter((n) => n.startsWith("task."));
  if (metrics.length === 0) return null;
  const metric = view.taskMetric ?? metrics[0] ?? "";
  const direction = objectiveInfo(metric).direction;
  return (
    <>
      <label className="inline">
        Task metric bounded
        <select
          value={metric}
          onChange={(e) => {
            onChange({ taskMetric: e.target.value, bounds: { ...view.bounds, taskLimit: null } });
          }}
        >
          {metrics.map((n) => (
            <option key={n} value={n}>
              {axisLabel(n)}
            </option>
          ))}
        </select>
      </label>
      <BoundControl
        key={metric}
        label={`${direction === "min" ? "Max" : "Min"} ${objectiveInfo(metric).label.toLowerCase()}`}
        side={direction === "min" ? "max" : "min"}
        value={view.taskMetric === metric ? view.bounds.taskLimit : null}
        values={rows.map((r) => value(r, metric))}
        log={false}
        onChange={(v) => {
          onChange({ taskMetric: metric, bounds: { ...view.bounds, taskLimit: v } });
        }}
      />
    </>
  );
}
