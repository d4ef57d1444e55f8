// Drives a sweep point's cause attribution for tests/browser/test_attribution_browser.py: open the sweep's page,
// pick the schedule point in the "All points" table, wait for its Cause attribution panel and read back the
// summary, the waterfall's bars from Plotly (category, bar length, base) and the per-technique table.
//
//   node drive_attribution.mjs '{"base", "chromium", "artifacts", "username", "password", "sweep", "label"}'
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("attribution", observations);

await runSignedIn(config, observations, step, async (page) => {
  step("sweep page: pick the schedule point");
  await page.goto(`${config.base}/#/jobs/${config.sweep}/sweep`);
  await page.getByRole("table", { name: "All points" }).getByText(config.label, { exact: true }).click();
  const panel = page.locator("section.attribution");
  await panel.waitFor({ state: "visible", timeout: 60_000 });
  observations.heading = await panel.getByRole("heading").first().innerText();
  observations.summary = await panel.locator("p").first().innerText();

  step("read the waterfall and the table");
  const plot = panel.locator(".js-plotly-plot");
  await plot.waitFor({ state: "attached", timeout: 60_000 });
  observations.bars = await plot.evaluate(async (gd) => {
    for (let i = 0; i < 300; i += 1) {
      if ((gd.data ?? []).length > 0 && gd.querySelectorAll(".barlayer .point").length > 0) {
        return {
          traces: gd.data.map((t) => ({ name: t.name, x: t.x, y: t.y, base: t.base })),
          drawn: gd.querySelectorAll(".barlayer .point").length,
          categories: gd._fullLayout.xaxis.categoryarray,
        };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the waterfall was never drawn");
  });
  observations.rows = await panel
    .getByRole("table", { name: "Cause attribution per technique" })
    .locator("tbody tr")
    .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((c) => c.textContent)));
  await page.screenshot({ path: join(config.artifacts, "sweep-attribution.png"), fullPage: true });
});
