import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ConfirmButton, ConfirmDialog } from "./ConfirmDialog";

const noop = () => undefined;

describe("ConfirmDialog", () => {
  it("asks the question, says what follows, and offers the action and a way out", () => {
    const html = renderToStaticMarkup(
      <ConfirmDialog title="Revoke the token “ci”?" confirm="Revoke" onConfirm={noop} onClose={noop}>
        <p>Whatever uses it stops working at once.</p>
      </ConfirmDialog>,
    );
    expect(html).toContain('<dialog class="modal" aria-label="Revoke the token “ci”?">');
    expect(html).toContain("<h2>Revoke the token “ci”?</h2>");
    expect(html).toContain("Whatever uses it stops working at once.");
    expect(html).toContain('<button type="button" class="danger">Revoke</button>');
    expect(html).toContain('<button type="button" class="secondary">Keep it</button>');
    expect(html).not.toContain('role="alert"');
  });

  it("disables the action while it is under way and shows the API's refusal inside the dialog", () => {
    const html = renderToStaticMarkup(
      <ConfirmDialog
        title="Cancel job?"
        confirm="Cancel the job"
        keep="Let it run"
        pending
        error={new Error("job 1 is already succeeded")}
        onConfirm={noop}
        onClose={noop}
      >
        <p>It stops.</p>
      </ConfirmDialog>,
    );
    expect(html).toContain('<button type="button" class="danger" disabled="">Cancel the job</button>');
    expect(html).toContain('<p class="error" role="alert">job 1 is already succeeded</p>');
    expect(html).toContain(">Let it run</button>");
  });
});

describe("ConfirmButton", () => {
  it("is only a button until clicked: nothing happens without the dialog", () => {
    const html = renderToStaticMarkup(
      <ConfirmButton
        text="Cancel"
        ariaLabel="Cancel job “x”"
        title="Cancel job “x”?"
        confirm="Cancel the job"
        onConfirm={noop}
      >
        <p>It stops.</p>
      </ConfirmButton>,
    );
    expect(html).toBe(
      '<button type="button" class="small" aria-label="Cancel job “x”" aria-haspopup="dialog">Cancel</button>',
    );
  });
});

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

describe("one confirmation pattern", () => {
  it("leaves no browser confirm(), alert() or prompt() in the dashboard: every question is a ConfirmDialog", () => {
    const root = join(import.meta.dirname, "..");
    const files = sources(root);
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) => {
      // Code only: comments may name what is not used (this file's own header does).
      const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
      return /(?<![\w.])(window\.)?(confirm|alert|prompt)\s*\(/.test(text) ? [file.slice(root.length + 1)] : [];
    });
    expect(found).toEqual([]);
  });
});
