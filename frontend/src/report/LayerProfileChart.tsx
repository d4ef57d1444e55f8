// The per-layer profile of a fidelity job: SQNR and cosine of every matched layer against its depth, the
// accumulated error (carried up to the layer) next to the local one (added by the layer alone), the layer
// that adds the most error, and the matched layers as a sortable table.
import { Fragment, useMemo } from "react";
import { ApiError } from "../api/http";
import { useLayerProfile } from "../api/fidelity";
import type { LayerFidelity, LayerProfile } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Notes } from "../components/Notes";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { notesBesideKernelGaps } from "../lib/kernelGap";
import { aliasText, layerLabel } from "../lib/layerNames";
import { countInfinite, countMissing, formatSqnr, layersOf, worstLayer } from "../lib/layerProfile";
import { cosineFigure, sqnrFigure } from "../lib/layerProfileCharts";
import { cosineCsv, sqnrCsv } from "../lib/layerProfileCsv";
import { KernelGapCallout } from "./KernelGap";
import { LayerTable } from "./LayerTable";
import { ShiftDiagnostics } from "./ShiftDiagnostics";

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function gaps(n: number): string {
  return n > 0 ? `${plural(n, "value")} could not be computed: gaps in the lines.` : "";
}

function Names({ names }: { names: string[] }) {
  return names.map((n, i) => (
    <Fragment key={n}>
      {i > 0 && ", "}
      <code>{n}</code>
    </Fragment>
  ));
}

function Unmatched({ profile }: { profile: LayerProfile }) {
  const golden = profile.unmatched_golden ?? [];
  const compressed = profile.unmatched_compressed ?? [];
  if (golden.length === 0 && compressed.length === 0)
    return <p className="muted small-text">Every layer of both models was matched.</p>;
  return (
    <details className="more-metrics unmatched">
      <summary>
        Not matched: {plural(golden.length, "golden layer")}, {plural(compressed.length, "compressed layer")} (no point
        on the charts)
      </summary>
      {golden.length > 0 && (
        <p className="small-text">
          Golden: <Names names={golden} />
        </p>
      )}
      {compressed.length > 0 && (
        <p className="small-text">
          Compressed: <Names names={compressed} />
        </p>
      )}
    </details>
  );
}

function WorstLayer({ worst }: { worst: LayerFidelity | null }) {
  if (!worst)
    return (
      <p className="muted">No layer has a finite local SQNR, so none can be singled out as adding the most error.</p>
    );
  return (
    <p className="worst-layer">
      Adds the most error: <code title={aliasText(worst) || undefined}>{layerLabel(worst)}</code> ({worst.op_type},
      depth {worst.depth}), local SQNR <strong>{formatSqnr(worst.local)}</strong>
      <span className="muted"> (accumulated {formatSqnr(worst.accumulated)})</span>.
    </p>
  );
}

function Profile({ profile }: { profile: LayerProfile }) {
  const layers = useMemo(() => layersOf(profile), [profile]);
  const worst = useMemo(() => worstLayer(layers), [layers]);
  const sqnr = useMemo(() => sqnrFigure(profile), [profile]);
  const cosine = useMemo(() => cosineFigure(profile), [profile]);
  const notes = notesBesideKernelGaps(profile);
  const infinite = countInfinite(layers);
  return (
    <>
      {profile.error && (
        <p className="warning" role="alert">
          <strong>No per-layer profile.</strong> {capitalize(profile.error)} (The output-level report above still
          stands.)
        </p>
      )}
      {profile.not_applicable && (
        <p className="warning" role="status" data-testid="profile-not-applicable">
          <strong>No per-layer comparison for these two models.</strong> {profile.not_applicable}
        </p>
      )}
      {layers.length === 0 ? (
        !profile.error && <Empty>No layer of the golden model could be matched to one of the compressed model.</Empty>
      ) : profile.not_applicable ? null : (
        <>
          <KernelGapCallout profile={profile} />
          <WorstLayer worst={worst} />
          <div className="two-col">
            <ChartPanel
              title="Per-layer SQNR"
              csv={() => sqnrCsv(profile)}
              caption={[
                infinite > 0
                  ? `${plural(infinite, "SQNR")} of +∞ (identical outputs) sit on the dotted line at the ∞ tick, ringed by △.`
                  : "",
                gaps(countMissing(layers, "sqnr")),
                worst ? "Shaded, local value ringed in red: the layer that adds the most error." : "",
                layers.some((l) => l.qdq_err)
                  ? "Green squares: the compressed model's own quantizer at each re-quantized tensor (its input vs its dequantized output, as onnxruntime's qdq_loss_debug measures it)."
                  : "",
              ]
                .filter(Boolean)
                .join(" ")}
            >
              <Plot data={sqnr.data} layout={sqnr.layout} filename="layer-sqnr" height={360} />
            </ChartPanel>
            <ChartPanel
              title="Per-layer cosine similarity"
              csv={() => cosineCsv(profile)}
              caption={["Mean per-sample cosine of each layer's outputs.", gaps(countMissing(layers, "cosine"))]
                .filter(Boolean)
                .join(" ")}
            >
              <Plot data={cosine.data} layout={cosine.layout} filename="layer-cosine" height={360} />
            </ChartPanel>
          </div>
        </>
      )}
      {(layers.length > 0 || !profile.error) && <Unmatched profile={profile} />}
      <Notes notes={notes} />
      {layers.length > 0 && <LayerTable layers={layers} worst={worst} />}
      {layers.length > 0 && <ShiftDiagnostics profile={profile} />}
    </>
  );
}

export function LayerProfileSection({ jobId }: { jobId: string }) {
  const profile = useLayerProfile(jobId, true);
  const n = profile.data?.n_samples ?? 0;
  return (
    <section aria-labelledby="layers-heading" className="layer-profile">
      <h2 id="layers-heading">
        Per-layer profile
        {n > 0 && <span className="muted small-text"> over the first {plural(n, "sample")}</span>}
      </h2>
      <p className="lead">
        Where the compressed model starts to diverge. <strong>Accumulated</strong>: the error carried up to a layer (the
        compressed network so far against the golden one). <strong>Local</strong>: the error the layer adds alone (fed
        the golden layer&apos;s inputs). Higher is better for both.
      </p>
      {profile.isPending ? (
        <Loading what="the per-layer profile" />
      ) : profile.isError ? (
        profile.error instanceof ApiError && profile.error.status === 404 ? (
          <Empty>
            This run has no per-layer profile: it ran with the parameter <code>layer_profile</code> set to false.
          </Empty>
        ) : (
          <ErrorMessage
            error={`Could not load the per-layer profile: ${profile.error instanceof Error ? profile.error.message : String(profile.error)}`}
          />
        )
      ) : (
        <Profile profile={profile.data} />
      )}
    </section>
  );
}
