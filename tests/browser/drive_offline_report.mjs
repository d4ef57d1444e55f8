// Drives tests/browser/test_offline_report.py: signs in to the running dashboard, opens a finished fidelity job's
// page, notes its headline cards, downloads the report with the page's "Download report (HTML)" button, then opens
// the downloaded file from file:// in a fresh browser context with the network off (every request that is not
// for the file itself is aborted and recorded) and measures what it drew: each chart's SVG, its size and marks.
// With "files" instead, it only opens those exported files (sensitivity, sweep) the same way.
//
//   node drive_offline_report.mjs '{"base": URL, "jobHash": "#/jobs/ID", "chromium": PATH, "artifacts": DIR,
//                                   "username": NAME, "password": PASSWORD}'
//   node drive_offline_report.mjs '{"files": {"sensitivity": PATH, "sweep": PATH}, "chromium": PATH,
//                                   "artifacts": DIR}'
//
// Prints one JSON line of observations for pytest; exits non-zero on the first failed step.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, CHROMIUM_ARGS, signIn } from "./browser_support.mjs";

const config = JSON.parse(process.argv[2] ?? "{}");
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

/** Opens an exported file with the network off and measures what it drew; for a sensitivity report it also
 * selects the first layer (its channel importance comes from the file), for a sweep it swaps the axes (another
 * frontier from the file). */
async function openOffline(browser, file, kind) {
  step(`open the ${kind} file from file:// with the network off`);
  const offline = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await offline.setOffline(true);
  await offline.route("**/*", (route) => {
    const url = route.request().url();
    if (/^(file|data|blob):/.test(url)) return route.continue();
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
  const drawn = () =>
    report.waitForFunction(
      () => {
        const figures = [...document.querySelectorAll("figure.chart")];
        return figures.length > 0 && figures.every((f) => f.querySelector(".main-svg"));
      },
      null,
      { timeout: 30_000 },
    );
  await report.locator("figure.chart .main-svg").first().waitFor({ state: "attached", timeout: 30_000 });
  await drawn();
  const seen = { banner: await report.getByRole("note").first().innerText() };
  seen.downloadButtons = await report.getByRole("link", { name: "Download report (HTML)" }).count();
  seen.apiLinks = await report.locator('a[href*="/api/"]').evaluateAll((links) =>
    links.filter((a) => a.getBoundingClientRect().width > 0).map((a) => a.getAttribute("href")),
  );
  if (kind === "fidelity") {
    await report.locator(".barlayer .point path").first().waitFor({ state: "attached" });
    seen.cards = await headlineCards(report);
    seen.verdict = await report.locator("#verdict-heading").innerText();
    seen.tableRows = await report.locator("tbody tr").count();
    step("click the worst sample's row: the inspector opens from the file (picture as a data: URL)");
    const row = report.locator("tr[data-sample]").first();
    seen.inspectedSample = Number(await row.getAttribute("data-sample"));
    await row.click();
    const inspector = report.getByTestId("sample-inspector");
    await inspector.locator("table tbody tr").first().waitFor({ timeout: 30_000 });
    seen.inspectorClasses = await inspector.locator("table tbody tr").evaluateAll((rows) =>
      rows.map((r) => Number(r.getAttribute("data-class"))),
    );
    const img = inspector.locator("img");
    await img.evaluate((el) => (el.complete ? null : new Promise((ok) => el.addEventListener("load", ok))));
    seen.inspectorImage = await img.evaluate((el) => ({ src: el.getAttribute("src").slice(0, 22), natural: el.naturalWidth }));
    await report.screenshot({ path: join(config.artifacts, "offline-inspector.png"), fullPage: true });
  }
  if (kind === "sensitivity") {
    const layer = report.locator("section", { has: report.locator("#layer-heading") }).locator("select").first();
    const first = await layer.locator("option").nth(1).getAttribute("value");
    await layer.selectOption(first);
    seen.layer = first;
    await report.locator("figure.chart", { hasText: `Channel importance of ${first}` }).locator(".main-svg")
      .first().waitFor({ state: "attached", timeout: 30_000 });
    await drawn();
  }
  if (kind === "sweep") {
    seen.frontierBefore = await report.locator("figure.chart .scatterlayer .trace").count();
    const y = report.getByLabel("y objective", { exact: true });
    const options = await y.locator("option").evaluateAll((o) => o.map((e) => e.value));
    const current = await y.inputValue();
    const other = options.find((o) => o !== current && o !== "");
    if (other) {
      await y.selectOption(other);
      seen.swappedTo = other;
      await report.waitForTimeout(500);
      await drawn();
    }
    seen.errors = await report.locator(".error, [role=alert]").allInnerTexts();
  }
  seen.charts = await charts(report);
  await report.screenshot({ path: join(config.artifacts, `offline-${kind}.png`), fullPage: true });
  await offline.close();
  return seen;
}

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS });
  try {
    if (config.files) {
      observations.opened = {};
      for (const [kind, file] of Object.entries(config.files)) observations.opened[kind] = await openOffline(browser, file, kind);
      return;
    }
    step("sign in and open the job's page on the dashboard");
    const online = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    const page = await online.newPage();
    await signIn(page, config);
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

    observations.opened = { fidelity: await openOffline(browser, file, "fidelity") };
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
