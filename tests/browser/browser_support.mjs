// What every browser driver of tests/browser shares: Playwright (from the dashboard's node_modules), the
// Chromium flags, the console-error watch, the sign-in form and the skeleton of a signed-in driver.
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../frontend/package.json", import.meta.url));
export const { chromium } = require("playwright-core");

// Headless, no GPU, and nothing that reaches out on its own (sync, updates, QUIC probes).
export const CHROMIUM_ARGS = [
  "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync",
];

/** Collect page errors and console errors into `errors` (a 401 is the signed-out probe, not an error). */
export function watchConsole(page, errors) {
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 401/.test(m.text())) errors.push(m.text());
  });
}

/** Sign in through the dashboard's form and wait for the signed-in header. */
export async function signIn(page, { base, username, password }) {
  await page.goto(`${base}/`);
  const form = page.getByRole("form", { name: "Sign in to Kneeboard" });
  await form.getByLabel("Username").fill(username);
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Sign in" }).click();
  await page.locator("header .user-name").waitFor();
}

/** A driver's config (argv[2], JSON) with its artifacts folder made, and its `step` logger (steps are recorded
 * in `observations.steps` and echoed on stderr as `[tag] name`). */
export function startDriver(tag, observations) {
  const config = JSON.parse(process.argv[2] ?? "{}");
  mkdirSync(config.artifacts, { recursive: true });
  const step = (name) => {
    observations.steps.push(name);
    console.error(`[${tag}] ${name}`);
  };
  return { config, step };
}

/** Launch Chromium, open a page (30 s default timeout, console errors into `observations.consoleErrors`), sign
 * in as the config's user, run `body(page, context)`, close the browser and print `observations` as one JSON
 * line; a failed step is recorded as `observations.error` and makes the exit code 1. */
export async function runSignedIn(config, observations, step, body, { viewport = { width: 1440, height: 900 } } = {}) {
  const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    watchConsole(page, observations.consoleErrors);
    step("sign in");
    await signIn(page, config);
    await body(page, context);
  } catch (error) {
    observations.error = String(error?.stack ?? error);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(observations));
}
