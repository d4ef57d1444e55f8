// Drives the "Does divergence predict the task?" section for tests/browser/test_task_proxy_browser.py: open a
// segmentation job's report, count the task breakdown's IoU bars, read the section (rho in words, scatter points, disagreeing and worst samples),
// then click a scatter point and read the report's hash (it names the opened sample).
//
//   node drive_task_proxy.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                               "password": PASSWORD, "jobId": ID}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("task-proxy", observations);

await runSignedIn(config, observations, step, async (page) => {
  observations.notFound = [];
  page.on("response", (r) => {
    if (r.status() === 404)
      observations.notFound.push(new URL(r.url()).pathname);
  });
  step("open the report: the task breakdown, then the task proxy section");
  await page.goto(`${config.base}/#/jobs/${config.jobId}`);
  const breakdown = page.locator("section[aria-label='Task breakdown']");
  const iouChart = breakdown.locator("figure", { hasText: "IoU by class" });
  await iouChart
    .locator(".barlayer .point")
    .first()
    .waitFor({ timeout: 60_000 });
  observations.iouBars = await iouChart.locator(".barlayer .point").count();
  observations.iouLegend = await iouChart
    .locator(".legendtext")
    .allTextContents();
  const section = page.locator("section[aria-labelledby=task-proxy-heading]");
  await section.waitFor({ timeout: 60_000 });
  observations.metric = await section.locator("select").inputValue();
  const rho = section.locator("p", { hasText: "Spearman's rho" });
  await rho.waitFor();
  observations.rhoText = (await rho.innerText()).trim();
  const points = section.locator(".scatterlayer .point");
  await points.first().waitFor({ timeout: 60_000 });
  observations.points = await points.count();
  observations.disagreements = await section
    .getByRole("table", {
      name: "Samples where divergence and task disagree most",
    })
    .locator("tbody tr")
    .count();
  const worst = section.getByRole("table", { name: /^Samples worst by / });
  await worst.locator("tbody tr").first().waitFor();
  observations.worstRows = await worst.locator("tbody tr").count();
  observations.worstFirst = (
    await worst.locator("tbody tr td:first-child").first().innerText()
  ).trim();
  await section.scrollIntoViewIfNeeded();
  await page.screenshot({
    path: join(config.artifacts, "task-proxy.png"),
    fullPage: false,
  });

  step("click a scatter point: the report opens that sample");
  const point = points.first();
  const box = await point.boundingBox();
  if (!box) throw new Error("the first scatter point has no box");
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await page.waitForFunction(() => location.hash.includes("sample="), null, {
    timeout: 10_000,
  });
  observations.hashAfterClick = await page.evaluate(() => location.hash);
  observations.clickedSample =
    /sample=(\d+)/.exec(observations.hashAfterClick)?.[1] ?? null;
  await page.screenshot({
    path: join(config.artifacts, "task-proxy-clicked.png"),
    fullPage: false,
  });
});
