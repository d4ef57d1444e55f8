// Drives the sweep page for tests/browser/test_recovered_frontier_browser.py: open the sweep's page, wait until
// its Pareto chart draws the recovered point (uid "recovered") and its link, and read them back from Plotly
// (the trace's numbers, the hover text, the drawn marker) with the chart's caption.
//
//   node drive_recovered_frontier.mjs '{"base", "chromium", "artifacts", "username", "password", "sweep"}'
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("recovered-frontier", observations);

await runSignedIn(config, observations, step, async (page) => {
  step("sweep page: the Pareto chart with the recovered point");
  await page.goto(`${config.base}/#/jobs/${config.sweep}/sweep`);
  const pareto = page.locator("figure.chart", { has: page.getByRole("heading", { name: "Pareto frontier", exact: true }) });
  const plot = pareto.locator(".js-plotly-plot");
  await plot.waitFor({ state: "attached", timeout: 90_000 });
  observations.chart = await plot.evaluate(async (gd) => {
    for (let i = 0; i < 300; i += 1) {
      const uids = (gd.data ?? []).map((t) => t.uid);
      const at = uids.indexOf("recovered");
      const traces = [...gd.querySelectorAll(".scatterlayer .trace")];
      if (at >= 0 && traces[at]?.querySelectorAll(".points path").length > 0) {
        const links = gd.data.find((t) => t.uid === "recovered-links");
        const marker = gd.data[at];
        return {
          uids,
          x: marker.x,
          y: marker.y,
          text: marker.text,
          symbol: marker.marker.symbol,
          drawnMarkers: traces[at].querySelectorAll(".points path").length,
          links: links ? { x: links.x, y: links.y, dash: links.line.dash } : null,
          legend: [...gd.querySelectorAll(".legend .traces .legendtext")].map((t) => t.textContent),
          axes: [gd._fullLayout.xaxis.title.text, gd._fullLayout.yaxis.title.text],
        };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the recovered point was never drawn");
  });
  observations.caption = await pareto.locator("figcaption").innerText();
  await page.screenshot({ path: join(config.artifacts, "sweep-recovered.png"), fullPage: true });
});
