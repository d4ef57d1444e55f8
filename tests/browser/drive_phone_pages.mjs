// Visits every page of the dashboard (and the states that open more of it: each launch form, the graph's node
// panel, the side-by-side graphs) at each viewport for tests/browser/test_phone_pages.py, in one browser, and
// measures in the page what a phone user meets:
//  - the page's own sideways scroll (document.scrollingElement.scrollWidth against the viewport);
//  - every visible control (button, select, input, textarea, link styled as a button) that cannot be reached
//    without scrolling sideways: off the viewport, or clipped by a box that scrolls or hides. A data table may
//    scroll sideways on purpose, but only its header's sort buttons may sit in the hidden part, never an action;
//  - single-line controls stretched taller than a line (a select in a flex column once grew to 110 px), and
//    selects whose chosen label is cut while the select could have been wider (a three-column grid at 390 px);
//  - Plotly titles (chart, axis) outside their chart's SVG (clipped), axis titles drawn over their tick labels,
//    legends outside the chart and the hover toolbar over a legend or the chart title.
//
//   node drive_phone_pages.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                                "password": PASSWORD, "ids": {...}, "viewports": {"phone": [390, 844], ...}}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const seen = { steps: [], consoleErrors: [], pages: {} };
const { config, step } = startDriver("phones", seen);
const ids = config.ids;
const PAGES = {
  projects: "#/",
  project: `#/projects/${ids.project}`,
  model: `#/models/${ids.model}`,
  report: `#/jobs/${ids.report}`,
  sensitivity: `#/jobs/${ids.sensitivity}/sensitivity`,
  sweep: `#/jobs/${ids.sweep}/sweep`,
  recovery: `#/jobs/${ids.recovery}/recovery`,
  compare: `#/projects/${ids.project}/compare?jobs=${ids.sensitivity}&sweeps=${ids.sweep}`,
  team: `#/teams/${ids.team}`,
  account: "#/account",
  users: "#/users",
  // the detail panels a click opens, from their permalinks: a sample's inspector, a sweep point's panel
  "report-sample": `#/jobs/${ids.report}?sample=0`,
  "sweep-point": `#/jobs/${ids.sweep}/sweep?point=1`,
};

/** What shows that a detail state opened (so that its measure is not of the page without it). */
const OPENED = {
  "report-sample": "[data-testid=sample-inspector]",
  "sweep-point": "table.facts-table",
};

/** Until the title is there, the network is quiet and every chart is drawn (charts drawn when scrolled to are
 * scrolled to first). */
async function settle(page) {
  await page.locator("main h1").first().waitFor();
  await page.waitForLoadState("networkidle");
  await page.evaluate(async () => {
    for (const plot of document.querySelectorAll(".plot")) {
      if (plot.querySelector(".main-svg")) continue;
      plot.scrollIntoView({ block: "center" });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    window.scrollTo(0, 0);
  });
  await page.waitForFunction(
    () => {
      const plots = [...document.querySelectorAll(".plot")];
      const loading = [...document.querySelectorAll("[role=status]")].some(
        (e) => e.textContent.startsWith("Loading"),
      );
      return !loading && plots.every((p) => p.querySelector(".main-svg"));
    },
    null,
    { timeout: 30_000 },
  );
}

/** What a phone user meets on the page as it is drawn now (see the header). */
function measure() {
  const vw = document.documentElement.clientWidth;
  const describe = (el) => {
    const text =
      el.tagName === "SELECT"
        ? el.labels?.[0]?.firstChild?.textContent
        : el.textContent;
    const name =
      el.getAttribute("aria-label") ||
      text?.trim().slice(0, 40) ||
      el.getAttribute("name") ||
      "";
    const cls =
      typeof el.className === "string" && el.className.trim()
        ? "." + el.className.trim().split(/\s+/).join(".")
        : "";
    return `${el.tagName.toLowerCase()}${cls}${el.type ? `[${el.type}]` : ""} "${name}"`;
  };
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return (
      r.width > 2 &&
      r.height > 2 &&
      style.visibility !== "hidden" &&
      style.opacity !== "0"
    );
  };
  const clippers = (el) => {
    const boxes = [];
    for (
      let a = el.parentElement;
      a && a !== document.body;
      a = a.parentElement
    ) {
      const o = getComputedStyle(a).overflowX;
      if (o !== "visible") boxes.push(a);
    }
    return boxes;
  };
  const unreachable = [];
  const stretched = [];
  const cutSelects = [];
  const canvas = document.createElement("canvas").getContext("2d");
  const controls = document.querySelectorAll(
    "main button, main select, main input:not([type=hidden]), main textarea, main a.button, main [role=button], header button, header a",
  );
  for (const el of controls) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    const out = [];
    const boxes = clippers(el);
    // a data table's sort buttons may sit in the part that scrolls into view; nothing else may
    const headerInScroller =
      el.closest("thead") &&
      boxes.some(
        (b) =>
          ["auto", "scroll"].includes(getComputedStyle(b).overflowX) &&
          b.contains(el.closest("table")),
      );
    if (headerInScroller) continue;
    if (r.left < -1 || r.right > vw + 1) out.push(`viewport 0-${vw}`);
    for (const box of boxes) {
      const b = box.getBoundingClientRect();
      if (r.left >= b.left - 1 && r.right <= b.right + 1) continue;
      out.push(
        `clipped by ${box.tagName.toLowerCase()}.${String(box.className).split(" ")[0]} ${Math.round(b.left)}-${Math.round(b.right)}`,
      );
    }
    if (out.length)
      unreachable.push(
        `${describe(el)} at ${Math.round(r.left)}-${Math.round(r.right)}: ${out.join("; ")}`,
      );
    const singleLine =
      (el.tagName === "SELECT" && !el.multiple && el.size <= 1) ||
      (el.tagName === "INPUT" &&
        !["checkbox", "radio", "file", "range"].includes(el.type));
    if (singleLine && r.height > 48)
      stretched.push(
        `${describe(el)} ${Math.round(r.width)}x${Math.round(r.height)}`,
      );
    if (el.tagName === "SELECT" && !el.multiple && el.selectedIndex >= 0) {
      const style = getComputedStyle(el);
      canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const text = el.options[el.selectedIndex].text;
      const needed =
        canvas.measureText(text).width +
        parseFloat(style.paddingLeft) +
        parseFloat(style.paddingRight) +
        20;
      if (needed > el.clientWidth + 1) {
        // cut: allowed only when the select already takes its row (nothing more to give it)
        const row = el.closest("form, fieldset, section, .panel, dialog, main");
        const rr = row.getBoundingClientRect();
        const room = rr.right - parseFloat(getComputedStyle(row).paddingRight);
        if (
          r.right < room - 12 &&
          r.width <
            0.9 * (rr.width - parseFloat(getComputedStyle(row).paddingLeft))
        )
          cutSelects.push(
            `${describe(el)} "${text}" needs ${Math.round(needed)} px, has ${Math.round(el.clientWidth)}`,
          );
      }
    }
  }

  const inside = (r, b) =>
    r.left >= b.left - 1 &&
    r.right <= b.right + 1 &&
    r.top >= b.top - 1 &&
    r.bottom <= b.bottom + 1;
  const meets = (a, b) =>
    a.left < b.right - 1 &&
    b.left < a.right - 1 &&
    a.top < b.bottom - 1 &&
    b.top < a.bottom - 1;
  const charts = [];
  for (const plot of document.querySelectorAll(".plot")) {
    const svg = plot.querySelector(".main-svg");
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    const label =
      plot
        .closest("figure, section, .chart")
        ?.querySelector("h2, h3, h4, figcaption")
        ?.textContent.trim()
        .slice(0, 50) ?? "";
    const problems = [];
    const titles = [
      ...plot.querySelectorAll(
        ".g-xtitle text, .g-ytitle text, .g-x2title text, .g-y2title text, .g-gtitle text",
      ),
    ];
    for (const t of titles) {
      const r = t.getBoundingClientRect();
      if (r.width === 0 || !t.textContent.trim()) continue;
      if (!inside(r, box))
        problems.push(
          `title "${t.textContent}" at ${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} x ${Math.round(r.top - box.top)}..${Math.round(r.bottom - box.top)} outside ${Math.round(box.width)}x${Math.round(box.height)}`,
        );
    }
    for (const [title, ticks] of [
      [
        ".g-ytitle text",
        ".yaxislayer-above .ytick text, .yaxislayer-below .ytick text",
      ],
      [
        ".g-xtitle text",
        ".xaxislayer-above .xtick text, .xaxislayer-below .xtick text",
      ],
    ]) {
      for (const t of plot.querySelectorAll(title)) {
        const r = t.getBoundingClientRect();
        if (r.width === 0) continue;
        const over = [...plot.querySelectorAll(ticks)].filter(
          (k) => k.textContent.trim() && meets(r, k.getBoundingClientRect()),
        );
        if (over.length)
          problems.push(
            `title "${t.textContent}" over tick labels ${over.map((k) => k.textContent).join(", ")}`,
          );
      }
    }
    const legend = plot.querySelector(".legend");
    const legendBox = legend?.getBoundingClientRect();
    if (legendBox && legendBox.width > 0 && !inside(legendBox, box))
      problems.push("legend outside the chart");
    const modebar = plot.querySelector(".modebar");
    const modebarBox = modebar?.getBoundingClientRect();
    if (modebarBox && modebarBox.width > 0) {
      if (legendBox && legendBox.width > 0 && meets(modebarBox, legendBox))
        problems.push("toolbar over the legend");
      const gtitle = plot.querySelector(".g-gtitle text");
      if (
        gtitle &&
        gtitle.textContent.trim() &&
        meets(modebarBox, gtitle.getBoundingClientRect())
      )
        problems.push("toolbar over the title");
    }
    charts.push({ label, width: Math.round(box.width), problems });
  }
  return {
    viewport: vw,
    scrollWidth: document.scrollingElement.scrollWidth,
    unreachable,
    stretched,
    cutSelects,
    charts,
  };
}

/** Measure the page as it is now under `key`, with a full-page screenshot. */
async function record(page, key) {
  seen.pages[key] = await page.evaluate(measure);
  await page.screenshot({
    path: join(config.artifacts, `${key.replace("/", "-")}.png`),
    fullPage: true,
  });
}

await runSignedIn(config, seen, step, async (page) => {
  for (const [viewport, [width, height]] of Object.entries(config.viewports)) {
    await page.setViewportSize({ width, height });
    for (const [name, hash] of Object.entries(PAGES)) {
      step(`${viewport}: ${name}`);
      await page.goto(`${config.base}/${hash}`);
      if (OPENED[name]) await page.locator(OPENED[name]).first().waitFor();
      await settle(page);
      await record(page, `${viewport}/${name}`);
      if (name === "project") {
        // each launch form (the fidelity one is open first)
        const kinds = page
          .getByRole("radiogroup", { name: "Job kind" })
          .locator("label");
        const labels = await kinds.allTextContents();
        seen.launchKinds = labels;
        for (const label of labels.slice(1)) {
          step(`${viewport}: launch ${label}`);
          await kinds.filter({ hasText: label }).click();
          await page
            .getByRole("heading", {
              name: `Launch a ${label.toLowerCase()} job`,
            })
            .waitFor();
          await page.waitForLoadState("networkidle");
          await record(page, `${viewport}/launch-${label.toLowerCase()}`);
        }
      }
      if (name === "model") {
        step(`${viewport}: the graph's node panel`);
        const find = page.getByLabel("Find a layer by name or alias");
        await find.fill("conv");
        await find.press("Enter");
        await page.getByTestId("node-panel").waitFor();
        await page.waitForLoadState("networkidle");
        await record(page, `${viewport}/graph-node`);
        step(`${viewport}: the side-by-side graphs`);
        const mode = page.getByLabel("Graph mode");
        await mode.selectOption({ index: 1 });
        await page.waitForLoadState("networkidle");
        await page.locator(".graph-section svg").first().waitFor();
        await settle(page);
        await record(page, `${viewport}/graph-side`);
      }
    }
  }
});
