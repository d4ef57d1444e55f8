import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { TableHead } from "./TableHead";

describe("TableHead", () => {
  it("names the columns, numeric ones right-aligned", () => {
    expect(renderToStaticMarkup(<TableHead columns={["Name", { label: "Size", numeric: true }]} />)).toBe(
      '<thead><tr><th>Name</th><th class="num">Size</th></tr></thead>',
    );
  });

  it("ends with an actions column only screen readers name", () => {
    expect(renderToStaticMarkup(<TableHead columns={["Name"]} actions />)).toBe(
      '<thead><tr><th>Name</th><th><span class="visually-hidden">Actions</span></th></tr></thead>',
    );
  });
});
