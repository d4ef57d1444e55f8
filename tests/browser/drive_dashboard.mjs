// Drives the built dashboard in headless Chromium through a user's path, for tests/browser/test_dashboard.py:
// sign in (a wrong password first), make a personal API token on the account page (shown once; it works from
// Node until revoked), open the demo project, preview its dataset's samples (thumbnails), upload a model, wait
// for it to be inspected, launch a fidelity job from the form, wait for it in the jobs table, open its report, check the
// rendered Plotly charts (the per-layer profile's too: sort its table, download its CSV), click a table row, filter,
// download a chart's CSV and open the compare page; then launch a sensitivity scan of the golden model from the
// form, follow it live on its page (chunks), check the heatmap (one row per layer), click a cell to select a
// layer and see its channel-importance bars, switch to the all-but view, and overlay the scan on the compare
// page; then launch a sweep (three configurations) from the form, follow it to its Pareto chart (points, the
// frontier line, the knee), click a point with the mouse for its details and download its export (a zip),
// bound the KL to re-query the frontier, and put the sweep on the compare page's frontier; then read the team's
// audit trail, and end the session (cookies cleared): the sign-in page, then back on the same permalink.
// Screenshots go to the artifacts folder.
//
//   node drive_dashboard.mjs '{"base": URL, "model": PATH, "chromium": PATH, "artifacts": DIR,
//                              "username": NAME, "password": PASSWORD}'
//
// Prints one JSON line of observations for pytest to assert on; exits non-zero on the first failed step.
//
// Long on purpose (issue 34 left it whole): it is one user's journey, not a set of drivers. Each step starts
// where the previous one left the signed-in page and uses what it made (the uploaded model is the one the
// fidelity job compares, the compare page overlays that job, the scan and the sweep launched before it), so
// its parts cannot run alone; the helpers every driver shares already live in browser_support.mjs.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, CHROMIUM_ARGS, watchConsole } from "./browser_support.mjs";

const config = JSON.parse(process.argv[2] ?? "{}");
const UPLOADED_NAME = "browser-test int8";
const GOLDEN_NAME = "digits-cnn (fp32, golden)";

const observations = { steps: [], consoleErrors: [] };
mkdirSync(config.artifacts, { recursive: true });

function step(name) {
  observations.steps.push(name);
  console.error(`[browser] ${name}`);
}

async function shot(page, name) {
  await page.screenshot({ path: join(config.artifacts, `${name}.png`), fullPage: true });
}

/** The chart panel titled `title` (a string: exact; a RegExp: matched). */
function chart(page, title) {
  return page.locator("figure.chart", { has: page.getByRole("heading", { name: title, exact: typeof title === "string" }) });
}

/** Number of elements matching a CSS selector inside the chart panel titled `title`. */
function inChart(page, title, selector) {
  return chart(page, title).locator(selector).count();
}

/** Fills the sign-in page's form and submits it; returns the form (its alert says why when it failed). */
async function signIn(page, password = config.password) {
  const form = page.getByRole("form", { name: "Sign in to Kneeboard" });
  await form.getByLabel("Username").fill(config.username);
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Sign in" }).click();
  return form;
}

/** GET /api/v1/auth/me from Node with a bearer token: its status and, when 200, who and how. */
async function meWithToken(token) {
  const response = await fetch(`${config.base}/api/v1/auth/me`, { headers: { Authorization: `Bearer ${token}` } });
  if (response.status !== 200) return response.status;
  const body = await response.json();
  return { status: response.status, username: body.username, auth: body.auth };
}

/** Saves a download started by `click` into the artifacts; its file name and lines. */
async function saveDownload(page, click) {
  const [file] = await Promise.all([page.waitForEvent("download"), click()]);
  const path = join(config.artifacts, file.suggestedFilename());
  await file.saveAs(path);
  return { filename: file.suggestedFilename(), lines: readFileSync(path, "utf8").trim().split("\r\n") };
}

const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(20_000);
// Chromium logs every 401 answer as a console error: the first GET /auth/me before signing in, the wrong
// password and the ended session below are meant to get one.
watchConsole(page, observations.consoleErrors);

try {
  step("sign in: a wrong password first, then the right one");
  await page.goto(`${config.base}/`);
  const signInForm = await signIn(page, "not-the-password");
  const wrong = signInForm.getByRole("alert");
  await wrong.waitFor();
  observations.signIn = { wrongPassword: await wrong.innerText() };
  await shot(page, "0-sign-in-wrong-password");
  await signIn(page);
  const userName = page.locator("header .user-name");
  await userName.waitFor();
  observations.signIn.header = await userName.innerText();
  observations.signIn.teams = await page.locator("header .user-teams").innerText();

  step("account page: create a personal API token, use it from Node, revoke it");
  await page.getByRole("navigation", { name: "Account" }).getByRole("link", { name: "Account" }).click();
  await page.getByRole("heading", { name: "Personal API tokens" }).waitFor();
  const tokenForm = page.getByRole("form", { name: "Create an API token" });
  await tokenForm.getByLabel("Name").fill("browser-test token");
  await tokenForm.getByLabel(/^Days to expiry/).fill("7");
  await tokenForm.getByRole("button", { name: "Create token" }).click();
  const newToken = page.getByRole("region", { name: /^Token “browser-test token” created/ });
  const secret = await newToken.getByLabel("New token").inputValue();
  const tokenRow = page.getByRole("table", { name: "API tokens" }).getByRole("row", { name: /browser-test token/ });
  await tokenRow.waitFor();
  const apiToken = observations.apiToken = {
    secret,
    warning: await newToken.locator(".warning").innerText(),
    prefix: (await tokenRow.locator("td").nth(1).innerText()).replace(/…$/, ""),
    meWithToken: await meWithToken(secret),
  };
  await shot(page, "14-account-token-created");
  await newToken.getByRole("button", { name: /^Done/ }).click();
  await newToken.waitFor({ state: "detached" });
  apiToken.secretOnPageAfterDone = (await page.content()).includes(secret);
  await page.reload();
  await tokenRow.waitFor();
  apiToken.secretOnPageAfterReload = (await page.content()).includes(secret);
  apiToken.lastUsed = await tokenRow.locator("td").nth(3).innerText();
  // Revoking asks in the page's own dialog (issue 35: one pattern), never the browser's confirm(): "Keep it"
  // first (focused on opening, so Enter keeps), which must keep the token, then "Revoke".
  apiToken.nativeDialogs = 0;
  page.on("dialog", (dialog) => {
    apiToken.nativeDialogs += 1;
    void dialog.dismiss();
  });
  const revokeButton = tokenRow.getByRole("button", { name: "Revoke browser-test token" });
  await revokeButton.click();
  let ask = page.getByRole("dialog", { name: "Revoke the token “browser-test token”?" });
  await ask.waitFor();
  apiToken.askText = await ask.innerText();
  apiToken.focusedOnOpen = await page.evaluate(() => document.activeElement?.textContent ?? null);
  await ask.getByRole("button", { name: "Keep it" }).click();
  await ask.waitFor({ state: "detached" });
  apiToken.statusAfterKeep = await tokenRow.getAttribute("data-status");
  await revokeButton.click();
  ask = page.getByRole("dialog", { name: "Revoke the token “browser-test token”?" });
  await ask.getByRole("button", { name: "Revoke", exact: true }).click();
  await page.locator('tr[data-status="revoked"]', { hasText: "browser-test token" }).waitFor();
  await ask.waitFor({ state: "detached" });
  apiToken.statusAfterRevoke = await tokenRow.getAttribute("data-status");
  apiToken.meAfterRevoke = await meWithToken(secret);
  await shot(page, "15-account-token-revoked");

  step("projects page");
  await page.getByRole("link", { name: "Kneeboard", exact: true }).click();
  const demoLink = page.getByRole("link", { name: "demo", exact: true });
  await demoLink.waitFor();
  await shot(page, "1-projects");
  await demoLink.click();

  step("project page: the demo's models are ready");
  await page.getByRole("table", { name: "Models" }).getByText("ready").first().waitFor();
  observations.projectUrl = page.url();

  step("preview the demo dataset's samples: thumbnails actually load");
  const datasetsTable = page.getByRole("table", { name: "Datasets" });
  const previewButton = datasetsTable.getByRole("button", { name: /^Preview / }).first();
  await previewButton.click();
  const firstThumb = datasetsTable.getByRole("img", { name: /^sample 0(, label \d+)?$/ });
  await firstThumb.scrollIntoViewIfNeeded();
  await firstThumb.evaluate((img) => img.decode());
  observations.datasetPreview = {
    expanded: await previewButton.getAttribute("aria-expanded"),
    naturalWidth: await firstThumb.evaluate((img) => img.naturalWidth),
    thumbnails: await datasetsTable.locator("img.thumb").count(),
    arrays: await datasetsTable.locator(".sample-arrays li").count(),
  };
  await shot(page, "1b-dataset-preview");
  await previewButton.click();

  step("re-upload the demo's int8 file: the form says it is already in the project and stores nothing");
  const upload = page.getByRole("form", { name: "Upload a model" });
  await upload.getByLabel("File").setInputFiles(config.duplicate);
  await upload.getByLabel("Name").fill(`${UPLOADED_NAME} duplicate`);
  await upload.getByRole("button", { name: "Upload" }).click();
  await upload.getByRole("status").filter({ hasText: "already in the project" }).waitFor();
  observations.duplicateModelRows = await page
    .getByRole("table", { name: "Models" })
    .getByRole("row", { name: new RegExp(`${UPLOADED_NAME} duplicate`) })
    .count();

  step("upload a model through the form");
  await upload.getByLabel("File").setInputFiles(config.model);
  await upload.getByLabel("Name").fill(UPLOADED_NAME);
  await upload.getByRole("button", { name: "Upload" }).click();
  await upload.getByRole("status").filter({ hasText: `Uploaded ${UPLOADED_NAME}` }).waitFor();
  const modelRow = page.getByRole("table", { name: "Models" }).getByRole("row", { name: new RegExp(UPLOADED_NAME) });
  await modelRow.getByText("ready").waitFor({ timeout: 60_000 });
  observations.uploadedModelReady = true;

  step("launch a fidelity job from the form");
  const launch = page.getByRole("form", { name: "Launch a fidelity job" });
  await launch.getByLabel("Golden model").selectOption({ label: GOLDEN_NAME });
  await launch.getByLabel("Compressed model").selectOption({ label: UPLOADED_NAME });
  // The dataset select by role: the robustness checkbox's label ("... copies of the dataset ...") also
  // contains "Dataset", and getByLabel matches substrings.
  await launch.getByRole("combobox", { name: /^Dataset/ }).selectOption({ index: 1 });
  observations.defaultTopK = await launch.getByLabel("Top-k").inputValue();
  await launch.getByLabel("KL threshold (nats)").fill("0.0005");
  await launch.getByRole("button", { name: "Launch" }).click();
  await launch.getByRole("status").filter({ hasText: "Job queued" }).waitFor();

  step("wait for the job to succeed in the jobs table");
  const jobRow = page.locator("tr[data-job-id]", { hasText: UPLOADED_NAME }).filter({ hasText: "fidelity" }).first();
  await jobRow.and(page.locator('[data-status="succeeded"]')).waitFor({ timeout: 60_000 });
  await shot(page, "2-project-after-job");

  step("open the report");
  await jobRow.getByRole("link", { name: "Report" }).click();
  const histogram = "Per-sample KL histogram";
  await page.locator("figure.chart", { has: page.getByRole("heading", { name: histogram }) })
    .locator(".barlayer .point path").first().waitFor({ state: "attached" });
  await page.locator("figure.chart", { has: page.getByRole("heading", { name: "Reliability: compressed model" }) })
    .locator(".barlayer .point path").first().waitFor({ state: "attached" });
  observations.reportUrl = page.url();
  observations.headlineCards = await page.getByRole("list", { name: "Headline metrics" }).getByRole("listitem").count();
  observations.verdict = await page.locator("#verdict-heading").innerText();
  observations.histogram = {
    mainSvg: await inChart(page, histogram, ".main-svg"),
    bars: await inChart(page, histogram, ".barlayer .point"),
    shapes: await inChart(page, histogram, ".shapelayer path"),
    modebarPng: await inChart(page, histogram, '.modebar-btn[data-title="Download plot as a PNG"]'),
  };
  observations.reliability = {};
  for (const role of ["golden", "compressed"]) {
    const title = `Reliability: ${role} model`;
    observations.reliability[role] = {
      mainSvg: await inChart(page, title, ".main-svg"),
      bars: await inChart(page, title, ".barlayer .point"),
      scatterTraces: await inChart(page, title, ".scatterlayer .trace"),
    };
  }

  step("the per-layer profile");
  const layerChart = "Per-layer SQNR";
  await page.locator("figure.chart", { has: page.getByRole("heading", { name: layerChart }) })
    .locator(".scatterlayer .trace .points path").first().waitFor({ state: "attached" });
  await page.locator("figure.chart", { has: page.getByRole("heading", { name: "Per-layer cosine similarity" }) })
    .locator(".scatterlayer .trace .points path").first().waitFor({ state: "attached" });
  const layerTable = page.getByRole("table", { name: "Matched layers" });
  observations.layerProfile = {
    mainSvg: await inChart(page, layerChart, ".main-svg"),
    traces: await inChart(page, layerChart, ".scatterlayer .trace"),
    points: await inChart(page, layerChart, ".scatterlayer .trace .points path"),
    modebarPng: await inChart(page, layerChart, '.modebar-btn[data-title="Download plot as a PNG"]'),
    cosineTraces: await inChart(page, "Per-layer cosine similarity", ".scatterlayer .trace"),
    worst: await page.locator(".worst-layer").innerText(),
    tableRows: await layerTable.locator("tbody tr").count(),
    worstRows: await layerTable.locator("tbody tr.worst").count(),
    // One name per layer (issue 35): the chart's ticks, the table and the activation-shift table agree.
    tickNames: await page.locator("figure.chart", { has: page.getByRole("heading", { name: layerChart }) })
      .locator(".xaxislayer-above .xtick text").allTextContents(),
    tableNames: await layerTable.locator("tbody tr td:nth-child(2) > code").allInnerTexts(),
    shiftNames: await page.getByRole("table", { name: "Activation shift per layer" })
      .locator("tbody tr td:nth-child(2)").allInnerTexts(),
  };
  // Sorting the table by local SQNR (lowest first) puts the worst layer on top.
  await layerTable.getByRole("button", { name: /^Local SQNR/ }).click(); // highest first
  await layerTable.getByRole("button", { name: /^Local SQNR/ }).click(); // lowest first
  observations.layerProfile.sortedFirstIsWorst = await layerTable.locator("tbody tr").first()
    .evaluate((row) => row.classList.contains("worst"));
  const [layerDownload] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: `Download the data of ${layerChart} as CSV` }).click(),
  ]);
  const layerCsvPath = join(config.artifacts, layerDownload.suggestedFilename());
  await layerDownload.saveAs(layerCsvPath);
  observations.layerProfile.csv = {
    filename: layerDownload.suggestedFilename(),
    lines: readFileSync(layerCsvPath, "utf8").trim().split("\r\n"),
  };
  await page.locator("section.layer-profile").screenshot({ path: join(config.artifacts, "3b-layer-profile.png") });
  await shot(page, "3-report");

  step("click a row of the per-sample table");
  const samples = page.getByRole("table", { name: "Samples" });
  const firstRow = samples.locator("tbody tr").first();
  const sampleIndex = await firstRow.getAttribute("data-sample");
  await firstRow.click();
  await samples.locator('tbody tr[aria-selected="true"]').waitFor();
  await page.waitForFunction(([title, n]) => {
    const figure = [...document.querySelectorAll("figure.chart")].find((f) => f.querySelector("h3")?.textContent === title);
    return (figure?.querySelectorAll(".shapelayer path").length ?? 0) >= n;
  }, [histogram, observations.histogram.shapes + 1]);
  observations.reportThumbnails = await samples.locator("img.thumb-small").count();
  observations.selection = {
    sampleIndex,
    url: page.url(),
    histogramShapes: await inChart(page, histogram, ".shapelayer path"),
  };

  step("filter the table to flagged samples");
  await page.getByLabel("Flagged").selectOption("yes");
  await page.waitForURL(/flagged=yes/);
  await samples.locator("tbody tr").first().waitFor();
  await page.waitForFunction(() => !document.querySelector("table.samples.stale"));
  const flaggedRows = await samples.locator("tbody tr").count();
  const flaggedBadges = await samples.locator("tbody tr .badge", { hasText: "flagged" }).count();
  observations.flaggedFilter = { rows: flaggedRows, badges: flaggedBadges };
  await shot(page, "4-report-row-selected-flagged");

  step("download the histogram's CSV");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: `Download the data of ${histogram} as CSV` }).click(),
  ]);
  const csvPath = join(config.artifacts, download.suggestedFilename());
  await download.saveAs(csvPath);
  observations.csv = { filename: download.suggestedFilename(), head: readFileSync(csvPath, "utf8").split("\r\n")[0] };

  step("compare runs");
  await page.getByRole("link", { name: "Compare runs" }).click();
  await page.getByRole("table", { name: /Fidelity runs/ }).locator("tbody tr").first().waitFor();
  observations.compareRows = await page.getByRole("table", { name: /Fidelity runs/ }).locator("tbody tr").count();
  await shot(page, "5-compare");

  step("model page");
  await page.goto(observations.projectUrl);
  await page.getByRole("link", { name: UPLOADED_NAME }).click();
  await page.getByRole("table", { name: "Layers" }).locator("tbody tr").first().waitFor();
  observations.layerRows = await page.getByRole("table", { name: "Layers" }).locator("tbody tr").count();
  await shot(page, "6-model");

  step("launch a sensitivity scan of the golden model from the form");
  await page.goto(observations.projectUrl);
  await page.getByRole("radio", { name: "Sensitivity" }).check();
  const scan = page.getByRole("form", { name: "Launch a sensitivity job" });
  await scan.getByLabel(/^Model/).selectOption({ label: GOLDEN_NAME });
  await scan.getByLabel(/^Dataset/).selectOption({ index: 1 });
  const presets = scan.getByRole("group", { name: /^Configurations/ });
  observations.sensitivityForm = {
    defaultPresets: await presets.getByRole("checkbox", { checked: true }).evaluateAll(
      (boxes) => boxes.map((b) => b.closest("label").textContent.trim())),
    defaultBits: await scan.getByLabel(/^Mixed-precision average bits/).inputValue(),
  };
  await scan.getByLabel(/^Samples measured/).fill("100");
  await presets.getByLabel("W6", { exact: true }).uncheck(); // W8, W4 and noise-4 remain
  await presets.getByRole("button", { name: "Edit as JSON" }).click();
  observations.sensitivityForm.json = JSON.parse(await scan.getByLabel("Configurations (JSON)").inputValue());
  await scan.getByLabel("All-but view").check();
  await scan.getByText("More settings").click();
  await scan.getByLabel(/^Chunks/).fill("3");
  await scan.getByRole("button", { name: "Launch" }).click();
  const queued = scan.getByRole("status").filter({ hasText: "Job queued" });
  await queued.waitFor();
  await shot(page, "7-sensitivity-launched");

  step("follow the scan on its page until the heatmap is drawn");
  await queued.getByRole("link", { name: "its page" }).click();
  await page.locator("#chunks-heading").waitFor();
  observations.sensitivityWhileOpened = await page.locator(".facts .badge").first().innerText();
  await shot(page, "8a-sensitivity-opened"); // usually still running: progress and the chunks so far
  const heatmap = chart(page, "Sensitivity heatmap");
  await heatmap.locator(".heatmaplayer image").first().waitFor({ state: "attached", timeout: 90_000 });
  observations.sensitivityUrl = page.url();
  observations.sensitivityBatch = await page.locator(".facts > div")
    .filter({ has: page.locator("dt", { hasText: /^Batch$/ }) }).locator("dd").innerText();
  observations.heatmap = await heatmap.locator(".js-plotly-plot").evaluate((gd) => ({
    traceTypes: gd.data.map((t) => t.type),
    zRows: gd.data[0].z.length,
    zColumns: gd.data[0].z[0].length,
    columns: gd.data[0].x,
    firstHover: gd.data[0].text[0][0],
  }));
  observations.heatmap.images = await heatmap.locator(".heatmaplayer .hm image").count();
  observations.heatmap.yLabels = await heatmap.locator(".yaxislayer-above .ytick text").allTextContents();
  observations.heatmap.dataRows = Number(await heatmap.locator("[data-rows]").getAttribute("data-rows"));
  observations.heatmap.modebarPng = await heatmap.locator('.modebar-btn[data-title="Download plot as a PNG"]').count();
  observations.ranked = await page.getByRole("list", { name: "Layers, most sensitive first" }).locator("button").count();
  const chunks = page.getByRole("table", { name: /^Chunks/ });
  await chunks.locator('tbody tr[data-status="succeeded"]').nth(2).waitFor();
  observations.chunks = await chunks.locator("tbody tr").evaluateAll((rows) => rows.map((r) => ({
    status: r.dataset.status, worker: r.cells[3].textContent.trim(), attempts: Number(r.cells[4].textContent),
  })));
  observations.wholeModelRows = await page.getByRole("table", { name: "Whole model" }).locator("tbody tr").count();
  await page.getByRole("table", { name: "Mixed-precision plans" }).locator("tbody tr").first().waitFor();
  observations.plans = await page.getByRole("table", { name: "Mixed-precision plans" }).locator("tbody tr")
    .allInnerTexts();
  observations.heatmapCsv = await saveDownload(page, () =>
    page.getByRole("button", { name: "Download the data of Sensitivity heatmap as CSV" }).click());
  await heatmap.screenshot({ path: join(config.artifacts, "8b-sensitivity-heatmap.png") });

  step("click a heatmap cell: its layer's metadata and channel importance");
  const box = await heatmap.locator(".nsewdrag").first().boundingBox();
  const { zRows, zColumns } = observations.heatmap;
  const row = 1; // the second layer from the top (depth order)
  await page.mouse.click(box.x + box.width * (0.5 / zColumns), box.y + box.height * ((row + 0.5) / zRows));
  await page.waitForURL(/layer=/);
  const clicked = decodeURIComponent(new URL(page.url()).hash.match(/layer=([^&]+)/)[1]);
  const channelChart = chart(page, `Channel importance of ${clicked}`);
  await channelChart.locator(".barlayer .point path").first().waitFor({ state: "attached" });
  observations.layerClick = {
    layer: clicked,
    expected: observations.heatmap.yLabels[row],
    url: page.url(),
    heading: await page.locator("#layer-details-heading").innerText(),
    bars: await channelChart.locator(".barlayer .point").count(),
    outlined: await heatmap.locator(".shapelayer path").count(),
  };
  await page.getByLabel("Method").selectOption("l2");
  await page.waitForURL(/method=l2/);
  await channelChart.locator(".barlayer .point path").first().waitFor({ state: "attached" });
  observations.layerClick.l2Bars = await channelChart.locator(".barlayer .point").count();
  observations.channelCsv = await saveDownload(page, () =>
    channelChart.getByRole("button", { name: /as CSV$/ }).click());
  await page.locator("section.layer-details").screenshot({ path: join(config.artifacts, "8c-sensitivity-layer.png") });
  await shot(page, "8-sensitivity");

  step("the ranking selects a layer too, and the all-but view");
  const ranking = page.getByRole("list", { name: "Layers, most sensitive first" });
  const top = await ranking.locator("button").first().getAttribute("data-layer");
  await ranking.locator("button").first().click();
  await page.waitForURL(new RegExp(`layer=${encodeURIComponent(top)}`));
  await page.getByRole("radio", { name: "All but this layer compressed" }).check();
  await page.waitForURL(/view=all_but/);
  const allBut = chart(page, "Sensitivity heatmap (all but one layer)");
  await allBut.locator(".heatmaplayer image").first().waitFor({ state: "attached" });
  observations.allBut = {
    url: page.url(),
    zRows: await allBut.locator(".js-plotly-plot").evaluate((gd) => gd.data[0].z.length),
    hover: await allBut.locator(".js-plotly-plot").evaluate((gd) => gd.data[0].text[0][0]),
    wholeModelRows: await page.getByRole("table", { name: "Whole model" }).locator("tbody tr").count(),
  };
  await shot(page, "9-sensitivity-all-but");

  step("overlay the scan's profile on the compare page");
  await page.getByRole("link", { name: "Compare scans" }).click();
  const depthChart = chart(page, "Sensitivity against depth");
  await depthChart.locator(".scatterlayer .trace .points path").first().waitFor({ state: "attached" });
  await chart(page, "Sensitivity by layer type").locator(".barlayer .point path").first().waitFor({ state: "attached" });
  observations.profiles = {
    url: page.url(),
    traces: await inChart(page, "Sensitivity against depth", ".scatterlayer .trace"),
    points: await inChart(page, "Sensitivity against depth", ".scatterlayer .trace .points path"),
    typeBars: await inChart(page, "Sensitivity by layer type", ".barlayer .point"),
  };
  await page.locator("section.profiles").screenshot({ path: join(config.artifacts, "10-compare-sensitivity.png") });

  step("launch a sweep of the golden model from the form");
  await page.goto(observations.projectUrl);
  await page.getByRole("radio", { name: "Sweep" }).check();
  const sweepForm = page.getByRole("form", { name: "Launch a sweep job" });
  await sweepForm.getByLabel(/^Model/).selectOption({ label: GOLDEN_NAME });
  await sweepForm.getByLabel(/^Dataset/).selectOption({ index: 1 });
  const sweepPresets = sweepForm.getByRole("group", { name: /^Configurations/ });
  observations.sweepForm = {
    defaultPresets: await sweepPresets.getByRole("checkbox", { checked: true }).evaluateAll(
      (boxes) => boxes.map((b) => b.closest("label").textContent.trim())),
    defaultBatches: await sweepForm.getByLabel(/^Batch sizes/).inputValue(),
    latencyOn: await sweepForm.getByLabel(/^Time each point/).isChecked(),
    exportOn: await sweepForm.getByLabel(/^Store each point/).isChecked(),
  };
  await sweepForm.getByLabel(/^Evaluation samples/).fill("100");
  for (const label of ["W8A16", "W8", "W4", "prune 50 %", "low-rank 0.5"]) // W8A8, W4A8 and fp16 remain
    await sweepPresets.getByLabel(label, { exact: true }).uncheck();
  await sweepPresets.getByRole("button", { name: "Edit as JSON" }).click();
  observations.sweepForm.json = JSON.parse(await sweepForm.getByLabel("Configurations (JSON)").inputValue());
  await sweepForm.getByLabel(/^Timing repeats/).fill("3");
  await sweepForm.getByRole("button", { name: "Launch" }).click();
  const sweepQueued = sweepForm.getByRole("status").filter({ hasText: "Job queued" });
  await sweepQueued.waitFor();
  await shot(page, "11-sweep-launched");

  step("follow the sweep on its page until the Pareto chart and its frontier are drawn");
  await sweepQueued.getByRole("link", { name: "its page" }).click();
  await page.locator("#chunks-heading").waitFor();
  observations.sweepWhileOpened = await page.locator(".facts .badge").first().innerText();
  await shot(page, "12a-sweep-opened");
  const pareto = chart(page, "Pareto frontier");
  const paretoPlot = pareto.locator(".js-plotly-plot");
  await paretoPlot.waitFor({ state: "attached", timeout: 90_000 });
  // Plotly draws asynchronously: wait until the DOM has the frontier line and the knee marker.
  const drawn = (gd) => {
    const traces = [...gd.querySelectorAll(".scatterlayer .trace")];
    const uids = (gd.data ?? []).map((t) => t.uid);
    const count = (pred, selector) =>
      uids.reduce((n, uid, i) => n + (pred(uid) && traces[i] ? traces[i].querySelectorAll(selector).length : 0), 0);
    return {
      uids,
      points: count((u) => u.startsWith("points-"), ".points path"),
      frontierLine: count((u) => u === "frontier", "path.js-line"),
      frontierPoints: gd.data?.find((t) => t.uid === "frontier")?.x.length ?? 0,
      knee: count((u) => u === "knee", ".points path"),
      slowRings: count((u) => u === "slow", ".points path"),
      faded: count((u) => u.startsWith("points-") && u.endsWith("-out"), ".points path"),
      symbols: (gd.data ?? []).filter((t) => t.uid.startsWith("points-")).map((t) => t.marker.symbol),
      legend: [...gd.querySelectorAll(".legend .traces .legendtext")].map((t) => t.textContent),
      axes: [gd._fullLayout.xaxis.type, gd._fullLayout.yaxis.type],
      titles: [gd._fullLayout.xaxis.title.text, gd._fullLayout.yaxis.title.text],
    };
  };
  await paretoPlot.evaluate(async (gd, source) => {
    const seen = new Function(`return (${source})`)();
    for (let i = 0; i < 300; i += 1) {
      const d = seen(gd);
      if (d.frontierLine > 0 && d.knee > 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the frontier line or the knee was never drawn");
  }, drawn.toString());
  observations.sweepUrl = page.url();
  observations.pareto = await paretoPlot.evaluate((gd, source) => new Function(`return (${source})`)()(gd), drawn.toString());
  observations.pareto.modebarPng = await pareto.locator('.modebar-btn[data-title="Download plot as a PNG"]').count();
  observations.pareto.dataPoints = Number(await pareto.locator("[data-points]").getAttribute("data-points"));
  observations.pareto.frontierListed = await page.getByRole("list", { name: "Frontier" }).locator("button").count();
  observations.sweepTableRows = await page.getByRole("table", { name: "All points" }).locator("tbody tr").count();
  const sweepChunks = page.getByRole("table", { name: /^Chunks/ });
  observations.sweepChunks = await sweepChunks.locator("tbody tr").evaluateAll((rows) => rows.map((r) => ({
    status: r.dataset.status, point: r.cells[1].textContent.trim(),
  })));
  observations.paretoCsv = await saveDownload(page, () =>
    page.getByRole("button", { name: "Download the data of Pareto frontier as CSV" }).click());
  await page.locator('section[aria-labelledby="pareto-heading"]').screenshot({ path: join(config.artifacts, "12b-sweep-pareto.png") });

  step("click a point of the scatter: its details and its export");
  // The first point of the "simulated only" trace (else of the first points trace), clicked where Plotly drew it.
  const target = await paretoPlot.evaluate((gd) => {
    const traces = [...gd.querySelectorAll(".scatterlayer .trace")];
    let i = gd.data.findIndex((t) => t.uid === "points-simulated");
    if (i < 0) i = gd.data.findIndex((t) => t.uid.startsWith("points-"));
    const id = gd.data[i].customdata[0];
    const box = traces[i].querySelectorAll(".points path")[0].getBoundingClientRect();
    return { id, label: gd.data[i].text[0].match(/<b>([^<]+)<\/b>/)[1], x: box.x + box.width / 2, y: box.y + box.height / 2 };
  });
  await page.mouse.move(target.x, target.y);
  await page.mouse.click(target.x, target.y);
  await page.waitForURL(/point=\d+/);
  const details = page.locator("section.point-details");
  await details.waitFor();
  const exportLink = details.getByRole("link", { name: /^Export/ });
  const [zip] = await Promise.all([page.waitForEvent("download"), exportLink.click()]);
  const zipPath = join(config.artifacts, zip.suggestedFilename());
  await zip.saveAs(zipPath);
  const zipBytes = readFileSync(zipPath);
  observations.pointClick = {
    expectedIndex: target.id.split(":").at(-1),
    expectedLabel: target.label,
    url: page.url(),
    heading: await page.locator("#point-heading").innerText(),
    runtime: await details.locator(".badge").filter({ hasText: /real runtime|simulated only/ }).first().innerText(),
    latencyRows: await details.getByRole("table", { name: "Latency per batch size" }).locator("tbody tr").count(),
    manifestKind: await details.getByRole("table", { name: "Export manifest" }).locator("tr").first().innerText(),
    selectedRow: await page.getByRole("table", { name: "All points" }).locator('tbody tr[aria-selected="true"]')
      .getAttribute("data-point"),
    export: {
      filename: zip.suggestedFilename(),
      bytes: zipBytes.length,
      zipMagic: zipBytes.subarray(0, 2).toString("latin1"),
      hasModel: zipBytes.includes("model.onnx"),
      hasManifest: zipBytes.includes("manifest.json"),
    },
  };
  await details.screenshot({ path: join(config.artifacts, "12c-sweep-point.png") });
  await shot(page, "12-sweep");

  step("a constraint re-queries the frontier");
  const frontierBefore = observations.pareto.frontierPoints;
  await page.getByLabel("Max KL mean (nats)", { exact: true }).fill("0.001");
  await page.waitForURL(/maxkl=0\.001/);
  await paretoPlot.evaluate(async (gd) => {
    for (let i = 0; i < 200; i += 1) {
      if (gd.data.some((t) => t.uid.endsWith("-out")) && !gd.closest(".pareto").classList.contains("updating")) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the bound never faded a point");
  });
  observations.bounded = await paretoPlot.evaluate((gd, source) => new Function(`return (${source})`)()(gd), drawn.toString());
  observations.bounded.url = page.url();
  observations.bounded.frontierBefore = frontierBefore;
  observations.bounded.listed = await page.getByRole("list", { name: "Frontier" }).locator("button").count();
  await page.locator('section[aria-labelledby="pareto-heading"]').screenshot({ path: join(config.artifacts, "12d-sweep-bounded.png") });

  step("the sweep on the compare page's frontier");
  await page.getByRole("link", { name: "Compare sweeps" }).click();
  const sweepsChart = chart(page, "Sweeps' Pareto frontier");
  const sweepsPlot = sweepsChart.locator(".js-plotly-plot");
  await sweepsPlot.waitFor({ state: "attached" });
  await sweepsPlot.evaluate(async (gd, source) => {
    const seen = new Function(`return (${source})`)();
    for (let i = 0; i < 300; i += 1) {
      if (seen(gd).frontierLine > 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the compare page's frontier was never drawn");
  }, drawn.toString());
  observations.sweepsCompare = await sweepsPlot.evaluate((gd, source) => new Function(`return (${source})`)()(gd), drawn.toString());
  observations.sweepsCompare.url = page.url();
  await page.locator("section.sweeps-compare").screenshot({ path: join(config.artifacts, "13-compare-sweeps.png") });

  step("the team page: members and the audit trail");
  await page.locator("header .user-teams").getByRole("link", { name: "default" }).click();
  const auditTable = page.getByRole("table", { name: "Audit trail" });
  await auditTable.locator("tbody tr").first().waitFor();
  const uploads = auditTable.locator('tbody tr[data-action="model.uploaded"]');
  observations.audit = {
    rows: await auditTable.locator("tbody tr").count(),
    uploadedByAdmin: await uploads.filter({ has: page.locator("td:nth-child(2)", { hasText: /^admin$/ }) }).count(),
    members: await page.getByRole("table", { name: "Members" }).locator("tbody tr").count(),
  };
  await shot(page, "16-team-audit");
  await page.getByLabel(/^Action/).selectOption("model.uploaded");
  await page.waitForURL(/action=model\.uploaded/);
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table[aria-label="Audit trail"]:not(.stale) tbody tr')];
    return rows.length > 0 && rows.every((r) => r.dataset.action === "model.uploaded");
  });
  observations.audit.filterUrl = page.url();
  observations.audit.filtered = await auditTable.locator("tbody tr").count();
  observations.audit.filteredUploads = await uploads.count();
  observations.audit.uploadedTargets = await uploads.locator("td:nth-child(4)").allInnerTexts();

  step("the session ends: the sign-in page, then back on the same permalink");
  const teamUrl = page.url();
  await context.clearCookies();
  await page.reload();
  const expiredForm = page.getByRole("form", { name: "Sign in to Kneeboard" });
  await expiredForm.waitFor();
  observations.sessionEnded = { signInShown: true, note: "", urlKept: page.url() === teamUrl };
  // A later call answering 401 (here: the audit trail's next filter) ends a live session the same way.
  await signIn(page);
  await auditTable.locator("tbody tr").first().waitFor();
  await context.clearCookies();
  await page.getByLabel(/^Action/).selectOption({ label: "all actions" });
  await expiredForm.waitFor();
  observations.sessionEnded.note = await expiredForm.getByRole("status").innerText();
  await shot(page, "17-session-ended");
  await signIn(page);
  await auditTable.locator("tbody tr").first().waitFor();
  observations.sessionEnded.backOnTeamPage = new URL(page.url()).hash.startsWith(new URL(teamUrl).hash.split("?")[0]);
} catch (error) {
  await shot(page, "failure").catch(() => {});
  observations.error = `${observations.steps.at(-1)}: ${error instanceof Error ? error.message : String(error)}`;
  process.exitCode = 1;
} finally {
  await browser.close();
  console.log(JSON.stringify(observations));
}
