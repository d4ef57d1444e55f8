// The frontier's points in order along x, each with its two numbers; the knee starred. A click selects one.
import type { FrontierOut } from "../api/types";
import { objectiveInfo } from "../lib/sweepObjectives";
import type { SweepView } from "../lib/sweepQuery";

export function FrontierList({
  frontier,
  view,
  selected,
  onSelect,
  sweepNames,
}: {
  frontier: FrontierOut;
  view: SweepView;
  selected: string | null;
  onSelect: (id: string) => void;
  sweepNames?: ReadonlyMap<string, string>;
}) {
  const x = objectiveInfo(view.x);
  const y = objectiveInfo(view.y);
  const candidates = frontier.n_points - frontier.excluded.length - frontier.filtered;
  return (
    <div className="frontier-list">
      <h3 id="frontier-heading">Frontier</h3>
      <p className="muted small-text">
        {frontier.frontier.length} of {candidates} candidate point{candidates === 1 ? "" : "s"}
        {frontier.filtered > 0 && `; ${frontier.filtered.toString()} outside the bounds`}
        {frontier.excluded.length > 0 && `; ${frontier.excluded.length.toString()} without a value`}.
      </p>
      <ol className="ranked" aria-labelledby="frontier-heading">
        {frontier.frontier.map((p) => (
          <li key={p.id}>
            <button
              type="button"
              className={`ranked-layer${p.id === selected ? " selected" : ""}`}
              aria-pressed={p.id === selected}
              onClick={() => {
                onSelect(p.id);
              }}
            >
              <span className="ranked-rank">{p.knee ? "★" : ""}</span>
              <span className="ranked-name">
                <span>
                  <code>{p.label}</code>
                  {sweepNames && (
                    <span className="muted small-text"> · {sweepNames.get(p.job_id) ?? p.job_id.slice(0, 6)}</span>
                  )}
                </span>
                <span className="muted small-text">
                  {x.format(p.objectives[view.x])} · {y.format(p.objectives[view.y])}
                </span>
              </span>
            </button>
          </li>
        ))}
      </ol>
    </div>
  );
}
