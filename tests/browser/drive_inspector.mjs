// Drives the sample inspector and the trends panel for tests/browser/test_inspector_browser.py, on a phone
// (390x844): click a row of the demo report's sample table, read the inspector (picture, probability rows),
// and the golden model's trends chart; the page must not overflow.
//
//   node drive_inspector.mjs '{"base", "chromium", "artifacts", "username", "password", "ids": {"job", "model"}}'
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("inspector", observations);
const ids = config.ids;
const width = () => document.documentElement.scrollWidth;

await runSignedIn(
  config,
  observations,
  step,
  async (page) => {
    // signed in at desktop size (the header's user name is hidden on phones), then a phone's width
    await page.setViewportSize({ width: 390, height: 844 });
    step("report page: click the sample row");
    await page.goto(`${config.base}/#/jobs/${ids.job}`);
    const row = page.locator(`tr[data-sample="${ids.sample}"]`);
    await row.waitFor();
    await row.click();
    const inspector = page.getByTestId("sample-inspector");
    await inspector.locator("table tbody tr").first().waitFor();
    // the inspector scrolled itself into view (smoothly: wait for the scroll to settle)
    await page.waitForFunction(
      () => {
        const box = document.querySelector('[data-testid="sample-inspector"]').getBoundingClientRect();
        return box.top >= 0 && box.top < window.innerHeight;
      },
      null,
      { timeout: 5000 },
    ).catch(() => {});
    observations.inspectorTop = await inspector.evaluate((el) => el.getBoundingClientRect().top);
    observations.viewportHeight = await page.evaluate(() => window.innerHeight);
    observations.heading = await inspector.locator("h3").innerText();
    observations.rows = await inspector.locator("table tbody tr").evaluateAll((rows) =>
      rows.map((r) => Array.from(r.querySelectorAll("td"), (td) => td.innerText.trim())),
    );
    const img = inspector.locator("img");
    await img.evaluate((el) => (el.complete ? null : new Promise((ok) => el.addEventListener("load", ok))));
    observations.image = await img.evaluate((el) => ({ natural: el.naturalWidth, shown: el.getBoundingClientRect().width }));
    observations.reportWidth = await page.evaluate(width);
    await page.screenshot({ path: join(config.artifacts, "inspector-phone.png"), fullPage: true });

    step("model page: the trends chart");
    await page.goto(`${config.base}/#/models/${ids.model}`);
    const trends = page.getByTestId("trends");
    await trends.locator(".js-plotly-plot").waitFor();
    observations.chart = await trends.locator(".js-plotly-plot").evaluate((el) => el.getBoundingClientRect().width);
    observations.runs = await trends.locator("ol li").allInnerTexts();
    await trends.getByLabel("Metric").selectOption("kl_mean_nats");
    observations.caption = await trends.locator("figcaption").innerText();
    await page.screenshot({ path: join(config.artifacts, "trends-phone.png"), fullPage: true });
  },
  { viewport: { width: 1440, height: 900 } },
);
