// Drives tests/browser/test_offline_report.py: signs in to the running dashboard, opens a finished job's page,
// notes its headline cards, downloads the report with the page's "Download report (HTML)" button, then opens the
// downloaded file from file:// in a fresh browser context with the network off (every request that is not for
// the file itself is aborted and recorded) and measures what it drew: each chart's SVG, its size and marks.
//
//   node drive_offline_report.mjs '{"base": URL, "jobHash": "#/jobs/ID", "chromium": PATH, "artifacts": DIR,
//                                   "username": NAME, "password": PASSWORD}'
//
// Prints one JSON line of observations for pytest; exits non-zero on the first failed step.
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.argv[2] ?? "{}");
const require = createRequire(new URL("../../frontend/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const CHROMIUM_ARGS = [
  "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync",
];
const observations = { steps: [], consoleErrors: [], outsideRequests: [] };
mkdirSync(config.artifacts, { recursive: true });

function step(name) {
  observations.steps.push(name);
  console.error(`[offline] ${name}`);
}

/** The headline cards: label -> shown value. */
async function headlineCards(page) {
  const cards = page.getByRole("list", { name: "Headline metrics" }).getByRole("listitem");
  const out = {};
  for (const card of await cards.all()) {
    out[await card.locator(".card-label").innerText()] = await card.locator(".card-value").innerText();
  }
  return out;
}

/** Every chart panel: its title, its Plotly SVG's size and how many marks (bars, points, lines, cells) it drew. */
async function charts(page) {
  return page.locator("figure.chart").evaluateAll((figures) =>
    figures.map((figure) => {
      const svg = figure.querySelector(".main-svg");
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      return {
        title: figure.querySelector("h2, h3, h4, figcaption")?.textContent?.trim() ?? "",
        svgs: figure.querySelectorAll(".main-svg").length,
        width: Math.round(box.width),
        height: Math.round(box.height),
        marks: figure.querySelectorAll(
          ".barlayer .point path, .scatterlayer .points path, .scatterlayer .js-line, .heatmaplayer image, .hm image",
        ).length,
      };
    }),
  );
}

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS });
  try {
    step("sign in and open the job's page on the dashboard");
    const online = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    const page = await online.newPage();
    await page.goto(`${config.base}/`);
    const form = page.getByRole("form", { name: "Sign in to Kneeboard" });
    await form.getByLabel("Username").fill(config.username);
    await form.getByLabel("Password").fill(config.password);
    await form.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Projects" }).first().waitFor();
    await page.goto(`${config.base}/${config.jobHash}`);
    await page.getByRole("list", { name: "Headline metrics" }).waitFor();
    observations.onlineCards = await headlineCards(page);

    step("download the report with the page's button");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download report (HTML)" }).click(),
    ]);
    const file = join(config.artifacts, download.suggestedFilename());
    await download.saveAs(file);
    observations.filename = download.suggestedFilename();
    await online.close();

    step("open the file from file:// with the network off");
    const offline = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await offline.setOffline(true);
    await offline.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("file:") || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
      observations.outsideRequests.push(url);
      return route.abort();
    });
    const report = await offline.newPage();
    report.on("request", (request) => {
      const url = request.url();
      if (!/^(file|data|blob):/.test(url) && !observations.outsideRequests.includes(url)) {
        observations.outsideRequests.push(url);
      }
    });
    report.on("console", (message) => {
      if (message.type() === "error") observations.consoleErrors.push(message.text());
    });
    report.on("pageerror", (error) => observations.consoleErrors.push(String(error)));
    await report.goto(pathToFileURL(file).href);
    await report.getByRole("list", { name: "Headline metrics" }).waitFor({ timeout: 30_000 });
    // Every chart panel has drawn its SVG (Plotly renders after the data is there).
    await report.waitForFunction(
      () => {
        const figures = [...document.querySelectorAll("figure.chart")];
        return figures.length > 0 && figures.every((f) => f.querySelector(".main-svg"));
      },
      null,
      { timeout: 30_000 },
    );
    await report.locator(".barlayer .point path").first().waitFor({ state: "attached" });
    observations.offlineCards = await headlineCards(report);
    observations.verdict = await report.locator("#verdict-heading").innerText();
    observations.banner = await report.getByRole("note").first().innerText();
    observations.charts = await charts(report);
    observations.downloadButtons = await report.getByRole("link", { name: "Download report (HTML)" }).count();
    await report.screenshot({ path: join(config.artifacts, "offline-report.png"), fullPage: true });

    step("sort the per-sample table by KL in the file");
    const table = report.locator("table", { has: report.locator("th", { hasText: "KL" }) }).last();
    observations.sampleRows = await table.locator("tbody tr").count();
    await offline.close();
  } finally {
    await browser.close();
  }
}

main()
  .then(() => {
    console.log(JSON.stringify(observations));
  })
  .catch((error) => {
    observations.error = String(error?.stack ?? error);
    console.log(JSON.stringify(observations));
    process.exit(1);
  });
