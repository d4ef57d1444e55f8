// Visits every dashboard page at each viewport for tests/browser/test_layout.py and measures its layout:
// the document's scroll width, the elements that stick out (for the message), the header's height, each
// chart's size, whether each side panel sits below its chart, caption widths, every href/src/action that
// leaves the server, Plotly toolbar buttons that link or upload out. Every request is intercepted: one to
// another origin is aborted and recorded. Then the report page in a fresh browser context (empty cache):
// time from navigation until its headline cards and every chart are drawn.
//
//   node drive_layout.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                           "password": PASSWORD, "ids": {...}, "viewports": {"phone": [390, 844], ...}}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, CHROMIUM_ARGS, signIn, watchConsole } from "./browser_support.mjs";

const config = JSON.parse(process.argv[2] ?? "{}");
const origin = new URL(config.base).origin;
const ids = config.ids;
const PAGES = {
  projects: "#/",
  project: `#/projects/${ids.project}`,
  model: `#/models/${ids.model}`,
  report: `#/jobs/${ids.report}`,
  sensitivity: `#/jobs/${ids.sensitivity}/sensitivity`,
  sweep: `#/jobs/${ids.sweep}/sweep`,
  recovery: `#/jobs/${ids.recovery}/recovery`,
  compare: `#/projects/${ids.project}/compare?jobs=${ids.sensitivity}&sweeps=${ids.sweep}`,
  team: `#/teams/${ids.team}`,
  account: "#/account",
};
// Plotly toolbar buttons that send a chart to plotly.com / Chart Studio or link there.
const OUTBOUND_BUTTONS = /chart studio|cloud|plotly|share|edit in/i;

const observations = { steps: [], consoleErrors: [], externalRequests: [], pages: {}, plotlyBundleLoads: 0 };
mkdirSync(config.artifacts, { recursive: true });

function step(name) {
  observations.steps.push(name);
  console.error(`[layout] ${name}`);
}

/** Every request of the context: same-origin ones go on, any other is aborted and recorded. */
async function guard(context) {
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("data:") || url.startsWith("blob:") || new URL(url).origin === origin) return route.continue();
    observations.externalRequests.push(url);
    return route.abort();
  });
}

function watch(page) {
  watchConsole(page, observations.consoleErrors);
  page.on("response", (r) => {
    if (r.status() >= 400 && r.status() !== 401) observations.consoleErrors.push(`${r.status()} ${r.url()}`);
  });
}

/** Until the page's title is there, the network is quiet and every chart on it is drawn (or 30 s). */
async function settle(page) {
  await page.locator("main h1").first().waitFor();
  await page.waitForLoadState("networkidle");
  await page.waitForFunction(
    () => {
      const plots = [...document.querySelectorAll(".plot")];
      const loading = [...document.querySelectorAll("[role=status]")].some((e) => e.textContent.startsWith("Loading"));
      return !loading && plots.every((p) => p.querySelector(".main-svg"));
    },
    null,
    { timeout: 30_000 },
  );
}

/** The page's layout facts, measured in the page. */
function measure() {
  const vw = document.documentElement.clientWidth;
  const scrolls = (el) => {
    // An absolutely placed element escapes a scroll box that is not its containing block: it counts.
    if (["absolute", "fixed"].includes(getComputedStyle(el).position)) return false;
    for (let a = el.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip") return true;
    }
    return false;
  };
  const describe = (el) =>
    `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : ""}`;
  // The outermost elements that stick out (their parent does not), outside any box that scrolls them.
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    const parent = el.parentElement?.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1 && (!parent || parent.right <= vw + 1) && !scrolls(el))
      wide.push(`${describe(el)} right=${Math.round(r.right)}`);
    if (wide.length >= 8) break;
  }
  const external = [];
  for (const el of document.querySelectorAll("[href], [src], [action], [formaction], [xlink\\:href]")) {
    for (const attr of ["href", "src", "action", "formaction", "xlink:href"]) {
      const value = el.getAttribute(attr);
      if (!value || value.startsWith("#") || /^(data|blob|javascript):/.test(value)) continue;
      const url = new URL(value, location.href);
      if (url.origin !== location.origin) external.push(`${describe(el)} ${attr}=${value}`);
    }
  }
  const modebarOut = [...document.querySelectorAll(".modebar-btn, .modebar a")]
    .map((b) => `${b.getAttribute("data-title") ?? ""} ${b.getAttribute("href") ?? ""}`.trim())
    .filter((t) => /chart studio|cloud|plotly|share|edit in|https?:/i.test(t));
  const charts = [...document.querySelectorAll(".plot")].map((p) => {
    const r = p.getBoundingClientRect();
    const svg = p.querySelector(".main-svg")?.getBoundingClientRect();
    return { width: Math.round(svg?.width ?? 0), height: Math.round(svg?.height ?? 0), box: Math.round(r.width) };
  });
  const captions = [...document.querySelectorAll("figure.chart figcaption")]
    .filter((c) => c.textContent.trim().split(/\s+/).length >= 6)
    .map((c) => ({ width: Math.round(c.getBoundingClientRect().width), text: c.textContent.trim().slice(0, 60) }));
  const splits = [...document.querySelectorAll(".split")].map((s) => {
    const kids = [...s.children].filter((k) => k.getBoundingClientRect().height > 0);
    const rects = kids.map((k) => k.getBoundingClientRect());
    const stacked = rects.every((r, i) => i === 0 || r.top >= rects[i - 1].bottom - 1);
    return { classes: s.className, stacked, widths: rects.map((r) => Math.round(r.width)) };
  });
  return {
    scrollWidth: document.documentElement.scrollWidth,
    wide,
    headerHeight: Math.round(document.querySelector("header")?.getBoundingClientRect().height ?? 0),
    external,
    modebarOut,
    charts,
    captions,
    splits,
  };
}

const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS });
try {
  step("sign in");
  const first = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await guard(first);
  first.on("request", (r) => {
    if (/plotly/i.test(r.url())) observations.plotlyBundleLoads += 1;
  });
  const page = await first.newPage();
  page.setDefaultTimeout(30_000);
  watch(page);
  await signIn(page, config);

  for (const [viewport, [width, height]] of Object.entries(config.viewports)) {
    await page.setViewportSize({ width, height });
    for (const [name, hash] of Object.entries(PAGES)) {
      step(`${viewport}: ${name}`);
      await page.goto(`${config.base}/${hash}`);
      await settle(page);
      observations.pages[`${viewport}/${name}`] = await page.evaluate(measure);
      await page.screenshot({ path: join(config.artifacts, `${viewport}-${name}.png`), fullPage: true });
    }
  }
  // The /docs page too: nothing of it may come from elsewhere (its requests go through the same guard).
  step("the API docs");
  await page.goto(`${config.base}/docs`);
  await page.locator(".swagger-ui .info").first().waitFor();
  observations.docsExternal = (await page.evaluate(measure)).external;
  const storage = await first.storageState();
  await first.close();

  // Three fresh contexts (empty cache, signed in): the median is printed with the spread, as the machine
  // is shared and one run alone says little.
  step("time to usable of the report page in fresh browser contexts");
  const runs = [];
  for (let k = 0; k < 3; k += 1) {
    const fresh = await browser.newContext({ viewport: { width: 1440, height: 900 }, storageState: storage });
    await guard(fresh);
    const report = await fresh.newPage();
    watch(report);
    const requests = [];
    report.on("requestfinished", (r) => requests.push(r));
    const started = Date.now();
    await report.goto(`${config.base}/${PAGES.report}`);
    await report.locator(".cards .card").first().waitFor();
    // the first chart painted: what the eye gets first (the page draws the visible charts first)
    await report.locator(".plot .main-svg").first().waitFor({ state: "attached" });
    const firstChartMs = Date.now() - started;
    await report.waitForFunction(() => {
      const plots = [...document.querySelectorAll(".plot")];
      return plots.length >= 3 && plots.every((p) => p.querySelector(".main-svg"));
    });
    const ms = Date.now() - started;
    let jsBytes = 0;
    for (const r of requests)
      if (r.url().endsWith(".js")) jsBytes += (await r.sizes().catch(() => ({ responseBodySize: 0 }))).responseBodySize;
    runs.push({ ms, firstChartMs, charts: await report.locator(".plot").count(), jsBytes, scripts: requests.filter((r) => r.url().endsWith(".js")).map((r) => r.url().split("/").pop()) });
    await fresh.close();
  }
  const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
  const firsts = runs.map((r) => r.firstChartMs).sort((a, b) => a - b);
  observations.timeToUsable = {
    medianMs: sorted[1], minMs: sorted[0], maxMs: sorted[2],
    firstChartMedianMs: firsts[1], firstChartMinMs: firsts[0], firstChartMaxMs: firsts[2], charts: runs[0].charts,
    jsBytes: runs[0].jsBytes, scripts: runs[0].scripts,
  };
  console.log(JSON.stringify(observations));
} catch (error) {
  observations.error = String(error?.stack ?? error);
  console.log(JSON.stringify(observations));
  process.exitCode = 1;
} finally {
  await browser.close();
}
