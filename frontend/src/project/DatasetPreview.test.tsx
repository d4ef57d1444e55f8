import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { SampleCard } from "./DatasetPreview";

describe("SampleCard", () => {
  it("shows a text dataset's prompt and reference as written, and no text for an array sample", () => {
    const base = { index: 2, label: null, name: null, image: false, image_array: null, error: null, arrays: {} };
    const html = renderToStaticMarkup(
      <SampleCard datasetId="d" sample={{ ...base, text: { prompt: "The mean of", reference: " the values" } }} />,
    );
    expect(html).toContain('<dt class="muted">prompt</dt><dd><q>The mean of</q></dd>');
    expect(html).toContain("<q> the values</q>");
    expect(renderToStaticMarkup(<SampleCard datasetId="d" sample={{ ...base, text: null }} />)).not.toContain("<dl");
  });
});
