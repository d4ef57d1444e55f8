// Pairing a golden and a compressed layer by clicking a node in each side-by-side graph (the report's match
// correction): the two last clicked nodes, turned back into the layers they stand for, and a button that
// pairs them (a choice where one node is several layers, e.g. a conv and its fused ReLU's output).
import { useMemo, useState } from "react";
import { layersAtNode, type LayerNames } from "./sideBySide";
import type { ModelGraph } from "./types";

export type Side = "golden" | "compressed";

/** Pairing layers by clicking one node in each graph (the report's match correction). */
export interface ClickPairing {
  /** The golden layers the matching can pair (key: the name the name map uses). */
  goldenLayers: readonly LayerNames[];
  /** The compressed layers they can be paired with. */
  compressedLayers: readonly string[];
  onPair: (golden: string, compressed: string) => void;
}

/** The two clicked nodes as layers, and a button that pairs them. */
export function PairByClicking({
  pairing,
  golden,
  compressed,
  picked,
}: {
  pairing: ClickPairing;
  golden: ModelGraph;
  compressed: ModelGraph;
  picked: Record<Side, string | null>;
}) {
  const goldenAt = useMemo(() => layersAtNode(golden, pairing.goldenLayers), [golden, pairing.goldenLayers]);
  const compressedAt = useMemo(
    () =>
      layersAtNode(
        compressed,
        pairing.compressedLayers.map((name) => ({ key: name, names: [name] })),
      ),
    [compressed, pairing.compressedLayers],
  );
  const options = {
    golden: picked.golden === null ? [] : (goldenAt.get(picked.golden) ?? []),
    compressed: picked.compressed === null ? [] : (compressedAt.get(picked.compressed) ?? []),
  };
  const [choice, setChoice] = useState<Record<Side, string>>({ golden: "", compressed: "" });
  const chosen = (side: Side) => (options[side].includes(choice[side]) ? choice[side] : (options[side][0] ?? ""));
  const describe = (side: Side) => {
    const node = picked[side];
    if (node === null) return <span className="muted">click a node in the {side} graph</span>;
    const list = options[side];
    if (list.length === 0)
      return (
        <>
          <code>{node}</code> <span className="muted">(no layer the profile compares)</span>
        </>
      );
    if (list.length === 1) return <code>{list[0]}</code>;
    return (
      <select
        aria-label={`${side === "golden" ? "Golden" : "Compressed"} layer of ${node}`}
        value={chosen(side)}
        onChange={(e) => {
          setChoice({ ...choice, [side]: e.target.value });
        }}
      >
        {list.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
    );
  };
  const ready = chosen("golden") !== "" && chosen("compressed") !== "";
  return (
    <p className="graph-pair-by-click" data-testid="graph-pair-by-click">
      Pair by clicking: golden {describe("golden")} with compressed {describe("compressed")}{" "}
      <button
        type="button"
        disabled={!ready}
        onClick={() => {
          pairing.onPair(chosen("golden"), chosen("compressed"));
        }}
      >
        Pair these
      </button>
    </p>
  );
}
