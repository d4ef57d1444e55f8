// The launcher's robustness choice (issue 35): which slices, at which severities; only the slices that apply
// to the chosen dataset and golden model are offered, the others listed with the reason.
import { Checkbox } from "../components/Checkbox";
import { SEVERITIES, SLICE_LABELS, type RobustnessSlice, type SliceOffer } from "./robustnessSlices";

export function RobustnessFields({
  offers,
  slices,
  onSlices,
  severities,
  onSeverities,
}: {
  offers: readonly SliceOffer[];
  slices: ReadonlySet<RobustnessSlice>;
  onSlices: (next: Set<RobustnessSlice>) => void;
  severities: ReadonlySet<number>;
  onSeverities: (next: Set<number>) => void;
}) {
  const offered = offers.filter((o) => o.why === null);
  const not = offers.filter((o) => o.why !== null);
  const toggle = <T,>(set: ReadonlySet<T>, item: T, on: boolean): Set<T> => {
    const next = new Set(set);
    if (on) next.add(item);
    else next.delete(item);
    return next;
  };
  return (
    <>
      <fieldset className="inline-choices" aria-label="Robustness slices to run">
        <legend>Slices</legend>
        {offered.map((o) => (
          <Checkbox
            key={o.slice}
            checked={slices.has(o.slice)}
            onChange={(on) => {
              onSlices(toggle(slices, o.slice, on));
            }}
          >
            {SLICE_LABELS[o.slice]}
          </Checkbox>
        ))}
        {offered.length === 0 && <span className="muted small-text">None applies to this dataset.</span>}
      </fieldset>
      {not.length > 0 && (
        <p className="muted small-text" data-testid="slices-not-offered">
          Not offered:{" "}
          {not.map((o, i) => (
            <span key={o.slice} title={o.why ?? ""}>
              {SLICE_LABELS[o.slice]} ({o.why}){i < not.length - 1 ? "; " : ""}
            </span>
          ))}
          .
        </p>
      )}
      <fieldset className="inline-choices" aria-label="Severities">
        <legend>Severities</legend>
        {SEVERITIES.map((s) => (
          <Checkbox
            key={s}
            checked={severities.has(s)}
            onChange={(on) => {
              onSeverities(toggle(severities, s, on));
            }}
          >
            {s.toString()}
          </Checkbox>
        ))}
      </fieldset>
    </>
  );
}
