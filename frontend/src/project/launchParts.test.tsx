import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ConfigsFieldset, type ConfigsEditor } from "./launchParts";

const PRESETS = [
  { id: "w8", label: "W8", title: "8-bit weights", config: { type: "quantize", bits: 8 } },
  { id: "w4", label: "W4", title: "4-bit weights", config: { type: "quantize", bits: 4 } },
];

const editor = (open: boolean, error: string | null): ConfigsEditor => ({
  configs: [PRESETS[0]?.config ?? {}],
  json: { open, text: "[]", error },
  setFromPresets: () => undefined,
  editJson: () => undefined,
  toggleJson: () => undefined,
  jsonProblem: error,
});

const render = (e: ConfigsEditor) =>
  renderToStaticMarkup(
    <ConfigsFieldset
      summary="(1 chosen)"
      presets={PRESETS}
      ticked={(p) => p.id === "w8"}
      onToggle={() => undefined}
      editor={e}
      custom={[]}
      maxRows={12}
      help="A list of configurations."
    >
      <p>a note</p>
    </ConfigsFieldset>,
  );

describe("ConfigsFieldset", () => {
  it("names the group Configurations, ticks the chosen presets, keeps the JSON editor folded", () => {
    const html = render(editor(false, null));
    expect(html).toMatch(
      /^<fieldset class="fields presets"><legend>Configurations <span class="muted small-text">\(1 chosen\)<\/span><\/legend>/,
    );
    expect(html).toContain('title="8-bit weights"><input type="checkbox" checked=""/>W8</label>');
    expect(html).toContain('title="4-bit weights"><input type="checkbox"/>W4</label>');
    expect(html).toContain('aria-expanded="false"');
    expect(html).toContain(">Edit as JSON</button></div><p>a note</p>");
    expect(html).not.toContain("<textarea");
  });

  it("opens the JSON editor the toggle controls, and while it does not parse, disables the presets and shows why", () => {
    const html = render(editor(true, "not JSON"));
    const controls = /aria-controls="([^"]+)"/.exec(html)?.[1];
    expect(controls).toMatch(/-json$/);
    expect(html).toContain(`<label id="${controls ?? ""}" class="json-editor">Configurations (JSON)`);
    expect(html).toContain('<span id="' + (controls ?? "") + '-help" class="error small-text">not JSON</span>');
    expect(html.match(/<input type="checkbox"[^>]*disabled=""/g)).toHaveLength(2);
  });
});
