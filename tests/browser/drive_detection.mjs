// Drives a detection job's report for tests/browser/test_detection_browser.py: the task breakdown's AP@.5 bars,
// then a clicked sample row opens the inspector with both models' boxes (and the truth) drawn over the picture,
// and unticking "golden" hides the golden boxes.
//
//   node drive_detection.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                              "password": PASSWORD, "jobId": ID, "sample": INDEX}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("detection", observations);

await runSignedIn(config, observations, step, async (page) => {
  step("open the report: the AP@.5 by class chart");
  await page.goto(`${config.base}/#/jobs/${config.jobId}`);
  const chart = page.locator("section[aria-label='Task breakdown'] figure", {
    hasText: "AP@.5 by class",
  });
  await chart.locator(".barlayer .point").first().waitFor({ timeout: 60_000 });
  observations.apBars = await chart.locator(".barlayer .point").count();
  observations.prCurves = await page
    .locator("section[aria-label='Task breakdown'] figure", {
      hasText: "Precision–recall",
    })
    .locator(".scatterlayer .trace")
    .count();

  step("click a sample row: the inspector draws the boxes");
  const row = page.locator(`tr[data-sample="${config.sample}"]`);
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  const overlay = page.locator("[data-testid=box-overlay]");
  await overlay.locator("img").waitFor({ timeout: 30_000 });
  await page.waitForFunction(
    () => {
      const img = document.querySelector("[data-testid=box-overlay] img");
      return (
        img instanceof HTMLImageElement && img.complete && img.naturalWidth > 0
      );
    },
    null,
    { timeout: 30_000 },
  );
  const count = async (role) =>
    overlay.locator(`rect[data-role=${role}]`).count();
  observations.boxes = {
    truth: await count("truth"),
    golden: await count("golden"),
    compressed: await count("compressed"),
  };
  const img = await overlay.locator("img").boundingBox();
  const svg = await overlay.locator("svg").boundingBox();
  observations.overlayAligned =
    img !== null &&
    svg !== null &&
    Math.abs(img.x - svg.x) < 1 &&
    Math.abs(img.width - svg.width) < 1 &&
    Math.abs(img.height - svg.height) < 1;
  observations.inspectorErrors = await page
    .locator("[data-testid=sample-inspector] .error")
    .count();
  await overlay.scrollIntoViewIfNeeded();
  await page.screenshot({
    path: join(config.artifacts, "detection-boxes.png"),
    fullPage: false,
  });

  step("untick golden: its boxes go");
  await page
    .locator(".box-legend label", { hasText: "golden" })
    .locator("input")
    .uncheck();
  observations.goldenAfterUntick = await count("golden");
  observations.compressedAfterUntick = await count("compressed");
});
