// Drives the model page's graph section for tests/browser/test_graph_view.py: the demo CNN coloured by a
// sensitivity scan and by the demo fidelity job's accumulated SQNR (box colours, a clicked node's panel, a
// search by alias), then a 500-layer model: its
// collapsed and expanded box counts and the frame times of a wheel zoom and a drag pan over every box.
//
//   node drive_graph.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME, "password": P,
//                          "cnn": MODEL_ID, "scan": JOB_ID, "fidelity": JOB_ID, "sqnrPick": NODE, "deep": MODEL_ID, "pick": NODE, "alias": ALIAS}'
//
// Prints one JSON line of observations (with "error" when a step failed).
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const seen = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("graph", seen);

/** Fill of every drawn box, by node id. */
const fills = (page) =>
  page.$$eval("[data-testid=graph-canvas] [data-node]", (boxes) =>
    Object.fromEntries(boxes.map((b) => [b.getAttribute("data-node"), b.querySelector("rect").getAttribute("fill")])),
  );

/** Frame intervals (ms) while `act` runs: a requestAnimationFrame loop in the page records them. */
async function frameTimes(page, act) {
  await page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (t) => {
      window.__frames.push(t - last);
      last = t;
      if (window.__frames.length < 100000 && !window.__stop) requestAnimationFrame(tick);
    };
    window.__stop = false;
    requestAnimationFrame(tick);
  });
  await act();
  const frames = await page.evaluate(() => {
    window.__stop = true;
    return window.__frames.slice(1);
  });
  const sorted = [...frames].sort((a, b) => a - b);
  const mean = frames.reduce((a, b) => a + b, 0) / Math.max(frames.length, 1);
  return { frames: frames.length, meanMs: mean, p95Ms: sorted[Math.floor(0.95 * (sorted.length - 1))] ?? null, maxMs: sorted.at(-1) ?? null };
}

async function panAndZoom(page) {
  const box = await page.locator("[data-testid=graph-canvas]").boundingBox();
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  await page.mouse.move(cx, cy);
  for (let i = 0; i < 20; i++) await page.mouse.wheel(0, i < 10 ? -120 : 120);
  await page.mouse.down();
  for (let i = 0; i < 40; i++) await page.mouse.move(cx + 6 * i, cy + 3 * i);
  await page.mouse.up();
}

await runSignedIn(config, seen, step, async (page) => {

  step("the demo CNN's graph");
  await page.goto(`${config.base}/#/models/${config.cnn}`);
  await page.locator("[data-testid=graph-canvas] [data-node]").first().waitFor();
  seen.cnnBoxes = await page.locator("[data-testid=graph-canvas] [data-node]").count();
  seen.cnnParamsFills = await fills(page);

  step("colour by the sensitivity scan");
  await page.getByLabel("Colour by").selectOption(`sens:${config.scan}`);
  await page.getByTestId("legend-max").filter({ hasText: "nats" }).waitFor();
  seen.configs = await page.getByLabel("Configuration", { exact: true }).locator("option").allTextContents();
  seen.config = await page.getByLabel("Configuration", { exact: true }).inputValue();
  seen.legend = [await page.getByTestId("legend-min").textContent(), await page.getByTestId("legend-max").textContent()];
  seen.scanFills = await fills(page);

  step(`click ${config.pick}`);
  await page.locator(`[data-testid=graph-canvas] [data-node="${config.pick}"]`).click();
  const panel = page.getByTestId("node-panel");
  await panel.waitFor();
  seen.panel = {
    title: await panel.locator("h3").textContent(),
    params: await panel.getByTestId("node-params").textContent(),
    metric: await panel.getByTestId("node-metric").textContent(),
    rows: await panel.locator("table tbody tr").allTextContents(),
    link: await panel.getByRole("link").getAttribute("href"),
  };
  await page.screenshot({ path: join(config.artifacts, "cnn-graph.png"), fullPage: true });

  step("colour by the fidelity job's accumulated SQNR");
  await page.getByLabel("Colour by").selectOption(`fid:${config.fidelity}:accumulated`);
  await page.getByTestId("legend-max").filter({ hasText: "dB" }).waitFor();
  seen.sqnrFills = await fills(page);
  seen.sqnrLegend = [await page.getByTestId("legend-min").textContent(), await page.getByTestId("legend-max").textContent()];
  await page.locator(`[data-testid=graph-canvas] [data-node="${config.sqnrPick}"]`).click();
  seen.fidelityPanel = await page.getByTestId("node-fidelity").textContent();

  step(`search ${config.alias}`);
  await page.getByLabel("Find a layer by name or alias").fill(config.alias);
  await page.getByLabel("Find a layer by name or alias").press("Enter");
  await panel.locator("h3").filter({ hasNotText: config.pick }).waitFor();
  seen.searched = await panel.locator("h3").textContent();

  step("the 500-layer model's graph");
  await page.goto(`${config.base}/#/models/${config.deep}`);
  await page.locator("[data-testid=graph-canvas] [data-node]").first().waitFor();
  seen.deepCollapsed = await page.locator("[data-testid=graph-canvas] [data-node]").count();
  seen.deepStats = await page.getByTestId("graph-stats").textContent();
  seen.collapsedFrames = await frameTimes(page, () => panAndZoom(page));

  step("expand everything");
  let started = Date.now();
  await page.getByRole("button", { name: "Expand all" }).click();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=graph-canvas] [data-node]").length > 400);
  seen.expandMs = Date.now() - started;
  seen.deepExpanded = await page.locator("[data-testid=graph-canvas] [data-node]").count();
  seen.expandedFrames = await frameTimes(page, () => panAndZoom(page));
  await page.screenshot({ path: join(config.artifacts, "deep-graph.png") });
}, { viewport: { width: 1440, height: 1000 } });
