// What every browser driver of tests/browser shares: Playwright (from the dashboard's node_modules), the
// Chromium flags, the console-error watch and the sign-in form.
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
