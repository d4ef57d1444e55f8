import type { UseQueryResult } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { UploadSection } from "./UploadSection";

interface Item {
  id: string;
  name: string;
}

const answered = (data: Item[]) => ({ isPending: false, isError: false, data }) as unknown as UseQueryResult<Item[]>;

const render = (query: UseQueryResult<Item[]>, upload: boolean) =>
  renderToStaticMarkup(
    <UploadSection
      name="things"
      title="Things"
      query={query}
      empty="No things yet."
      columns={["Name"]}
      actions={upload}
      row={(item) => (
        <tr data-id={item.id}>
          <td>{item.name}</td>
        </tr>
      )}
      upload={upload && <form aria-label="Upload a thing" />}
    />,
  );

describe("UploadSection", () => {
  it("lists the items in a table named by the heading, one row each, and the upload form", () => {
    const html = render(
      answered([
        { id: "a", name: "first" },
        { id: "b", name: "second" },
      ]),
      true,
    );
    expect(html).toContain('<section aria-labelledby="things-heading"><h2 id="things-heading">Things</h2>');
    expect(html).toContain('<table class="table" aria-labelledby="things-heading">');
    expect(html).toContain('<tbody><tr data-id="a"><td>first</td></tr><tr data-id="b"><td>second</td></tr></tbody>');
    expect(html).toContain('<span class="visually-hidden">Actions</span>');
    expect(html).toContain('<form aria-label="Upload a thing">');
  });

  it("says there are none instead of an empty table, and leaves the form out for those who may not upload", () => {
    const html = render(answered([]), false);
    expect(html).toContain('<p class="empty">No things yet.</p>');
    expect(html).not.toContain("<table");
    expect(html).not.toContain("<form");
  });

  it("shows the query loading", () => {
    const pending = { isPending: true, isError: false } as unknown as UseQueryResult<Item[]>;
    expect(render(pending, true)).toContain("Loading things…");
  });
});
