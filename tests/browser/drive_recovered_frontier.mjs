// Drives the sweep page for tests/browser/test_recovered_frontier_browser.py: open the sweep's page, wait until
// its Pareto chart draws the recovered point (uid "recovered") and its link, and read them back from Plotly
// (the trace's numbers, the hover text, the drawn marker) with the chart's caption. Then open the point by its
// permalink (?point=N, as a reload does): it must say it was recovered (the server's record), link the recovery
// and offer "Recover again", not "Recover this"; recover it again with QAT only (config.steps steps, never
// stopping early) and read the live loss curve drawn from the job's progress while it trains. Last, the
// project's jobs list: the first recovery's What text and its Results link to the recovery page (its before/
// after table), and from there the recovered model's page with its graph drawn; then a recovery launched from
// the golden model's page (its form: W8, AdaRound with 20 iterations), followed to its page.
//
//   node drive_recovered_frontier.mjs '{"base", "chromium", "artifacts", "username", "password", "sweep", "label",
//                                       "steps", "index", "project", "recovery", "model"}'
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

  step("the point by its permalink (a reload): recovered, as the server records it");
  await page.goto(`${config.base}/#/jobs/${config.sweep}/sweep?point=${config.index}`);
  await page.reload();
  const panel = page.locator(".point-details");
  const state = panel.locator("[data-recovery-state]");
  await state.waitFor({ timeout: 60_000 });
  observations.pointState = {
    state: await state.getAttribute("data-recovery-state"),
    text: await state.innerText(),
    link: await state.getByRole("link").getAttribute("href"),
    buttons: await panel.locator(".recover > button").allInnerTexts(),
  };
  await page.screenshot({ path: join(config.artifacts, "sweep-point-recovered.png"), fullPage: true });

  step("recover the point again with QAT only, and read the live loss curve while it trains");
  await page.getByRole("button", { name: "Recover again" }).click();
  const methods = page.getByRole("group", { name: /^Methods/ });
  for (const label of ["Cross-layer equalization", "AdaRound", "Bias correction"])
    await methods.getByLabel(label, { exact: true }).uncheck();
  await methods.getByLabel("Quantization-aware training", { exact: true }).check();
  await methods.getByLabel(/^Steps/).fill(String(config.steps));
  await methods.getByLabel(/^Patience/).fill("0");
  await page.getByRole("button", { name: "Launch recovery" }).click();
  const live = page.locator("figure.chart", { has: page.getByRole("heading", { name: "Recovery loss curve (live)" }) });
  const livePlot = live.locator(".js-plotly-plot");
  await livePlot.waitFor({ state: "attached", timeout: 120_000 });
  // keep reading while it trains: at least 3 sampled losses and 2 KL measurements (polls every 2 s)
  observations.live = await livePlot.evaluate(async (gd) => {
    let last = null;
    for (let i = 0; i < 600 && gd.isConnected; i += 1) {
      const loss = (gd.data ?? []).find((t) => t.name === "qat: training loss");
      const kl = (gd.data ?? []).find((t) => t.name === "qat: held-out KL");
      if (loss && kl) last = { lossSteps: loss.x, loss: loss.y, klSteps: kl.x, kl: kl.y };
      if (last && last.lossSteps.length >= 3 && last.klSteps.length >= 2) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    return last;
  });
  observations.liveCaption = await live.locator("figcaption").innerText().catch(() => null);
  await page.screenshot({ path: join(config.artifacts, "recovery-live-curve.png"), fullPage: true });

  step("the finished recovery: before/after per sample and per layer");
  const beforeAfter = page.getByTestId("recovery-before-after");
  await beforeAfter.locator(".js-plotly-plot").nth(1).waitFor({ state: "attached", timeout: 600_000 });
  observations.beforeAfter = {
    captions: await beforeAfter.locator("figcaption").allInnerTexts(),
    traces: await beforeAfter
      .locator(".js-plotly-plot")
      .evaluateAll((gds) => gds.map((gd) => gd.data.map((t) => ({ name: t.name, x: t.x, y: t.y })))),
  };
  await page.getByText("Every metric, before and after (held-out split)").click();
  observations.metrics = await page
    .getByRole("table", { name: "Every metric, before and after recovery" })
    .locator("tbody tr")
    .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("th, td")].map((c) => c.textContent)));
  await page.screenshot({ path: join(config.artifacts, "recovery-before-after.png"), fullPage: true });

  step("the jobs list: the first recovery's What and its Results link to the recovery page");
  await page.goto(`${config.base}/#/projects/${config.project}`);
  const row = page.locator(`tr[data-job-id="${config.recovery}"]`);
  await row.waitFor({ timeout: 60_000 });
  observations.jobRow = { what: await row.locator("td").nth(1).innerText() };
  await row.getByRole("link", { name: /its results$/ }).click();
  const steps = page.getByRole("table", { name: "Before and after recovery (held-out split)" });
  await steps.waitFor({ timeout: 60_000 });
  observations.recoveryPage = {
    hash: new URL(page.url()).hash,
    heading: await page.locator("h1").innerText(),
    facts: await page.locator("dl.facts").first().innerText(),
    rows: await steps
      .locator("tbody tr")
      .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((c) => c.textContent))),
  };
  await page.screenshot({ path: join(config.artifacts, "recovery-page.png"), fullPage: true });

  step("the recovered model's page: its graph drawn");
  await page.getByRole("link", { name: "The recovered model" }).click();
  await page.locator("[data-testid=graph-canvas] [data-node]").first().waitFor({ timeout: 60_000 });
  observations.recoveredGraph = {
    nodes: await page.locator("[data-testid=graph-canvas] [data-node]").evaluateAll((ns) => ns.map((n) => n.dataset.node)),
    errors: await page.locator(".graph-section .error").allInnerTexts(),
  };
  await page.screenshot({ path: join(config.artifacts, "recovered-model.png"), fullPage: true });

  step("the golden model's page: launch a recovery from its form (W8, AdaRound with 20 iterations)");
  await page.goto(`${config.base}/#/models/${config.model}`);
  await page.getByText("Recover a compressed version").click();
  const form = page.getByRole("form", { name: "Launch a recovery job" });
  await form.getByLabel(/^Dataset/).selectOption({ index: 1 });
  await form.getByLabel("Configuration to recover").selectOption("w8");
  await form.getByLabel(/^AdaRound iterations/).fill("20");
  await form.getByRole("button", { name: "Launch recovery" }).click();
  await form.getByRole("status").getByRole("link", { name: "its page" }).click();
  const launchedSteps = page.getByRole("table", { name: "Before and after recovery (held-out split)" });
  await launchedSteps.waitFor({ timeout: 300_000 });
  observations.formLaunch = {
    hash: new URL(page.url()).hash,
    rows: await launchedSteps.locator("tbody tr td:first-child").allInnerTexts(),
  };
  await page.screenshot({ path: join(config.artifacts, "recovery-from-form.png"), fullPage: true });
});
