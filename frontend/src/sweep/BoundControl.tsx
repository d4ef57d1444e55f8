// One bound of a Pareto chart (FrontierControls.tsx): a slider over the points' values and the exact number
// beside it, applied once the user stops moving it for a moment (BOUND_DEBOUNCE_MS); empty = no bound.
import { useEffect, useId, useRef, useState } from "react";
import { sliderScale } from "../lib/sweepBounds";

/** Quiet time before a bound is applied. */
export const BOUND_DEBOUNCE_MS = 400;

const parse = (text: string): number | null | undefined => {
  if (text.trim() === "") return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined; // undefined: not a number (not applied)
};

/** One bound: a slider over the points' values and the exact number; empty = no bound. */
export function BoundControl({
  label,
  side,
  value: bound,
  values,
  log,
  describe,
  unit = 1,
  onChange,
}: {
  label: string;
  side: "max" | "min";
  value: number | null;
  values: readonly (number | null)[];
  log: boolean;
  /** The bound in words next to the field ("3.9 KiB"). */
  describe?: (v: number) => string;
  /** The field is typed in this many base units (1024 for KiB, 0.01 for %); the bound stays in base units. */
  unit?: number;
  onChange: (v: number | null) => void;
}) {
  const id = useId();
  const scale = sliderScale(values, log);
  const shown = (v: number | null) => (v === null ? "" : String(Number((v / unit).toPrecision(6))));
  const read = (t: string) => {
    const typed = parse(t);
    return typed === null || typed === undefined ? typed : typed * unit;
  };
  const [text, setText] = useState(shown(bound));
  const [seen, setSeen] = useState(bound);
  if (bound !== seen) {
    // Changed from outside (the URL, "clear"): show it unless the field already says so.
    setSeen(bound);
    if (read(text) !== bound) setText(shown(bound));
  }
  const commit = useRef(onChange);
  useEffect(() => {
    commit.current = onChange;
  }, [onChange]);
  useEffect(() => {
    const typed = parse(text);
    const parsed = typed === null || typed === undefined ? typed : typed * unit;
    if (parsed === undefined || parsed === bound) return;
    const timer = setTimeout(() => {
      commit.current(parsed);
    }, BOUND_DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
    };
  }, [text, bound, unit]);
  const parsed = read(text);
  const position = scale
    ? parsed === null || parsed === undefined
      ? side === "max"
        ? scale.max
        : scale.min
      : scale.toPosition(parsed)
    : 0;
  return (
    <div className="bound">
      <label htmlFor={`${id}-number`}>{label}</label>
      <div className="bound-row">
        <input
          type="range"
          aria-label={`Slider: ${side} ${label.replace(/^(Max|Min) /, "")}`}
          min={scale?.min ?? 0}
          max={scale?.max ?? 1}
          step={scale?.step ?? 0.01}
          value={position}
          disabled={!scale}
          onChange={(e) => {
            if (scale) setText(shown(scale.toValue(Number(e.target.value))));
          }}
        />
        <input
          id={`${id}-number`}
          type="number"
          step="any"
          inputMode="decimal"
          placeholder="no bound"
          value={text}
          aria-invalid={parsed === undefined}
          onChange={(e) => {
            setText(e.target.value);
          }}
        />
        <button
          type="button"
          className="small"
          aria-label={`Clear the ${label.toLowerCase()} bound`}
          disabled={text === ""}
          onClick={() => {
            setText("");
          }}
        >
          ×
        </button>
      </div>
      {describe && parsed !== null && parsed !== undefined && (
        <span className="muted small-text">{describe(parsed)}</span>
      )}
    </div>
  );
}
