// Drives fidelity budgets for tests/browser/test_budgets_browser.py: on the demo project, the header badge
// counts the open alert, the alerts list shows its breach, acknowledging it empties the badge; then a budget
// is made in the editor (a rule that is not a number refused first) and listed.
//
//   node drive_budgets.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                            "password": PASSWORD, "ids": {"project", "alert"}}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("budgets", observations);
const ids = config.ids;

await runSignedIn(config, observations, step, async (page) => {
  step("project page: the badge counts the open alert");
  await page.goto(`${config.base}/#/projects/${ids.project}`);
  const badge = page.getByRole("button", { name: /open budget alert/ });
  await badge.waitFor();
  observations.badge = (await badge.innerText()).trim();

  step("the alerts list shows the breach");
  const row = page.locator(`tr[data-alert-id="${ids.alert}"]`);
  await row.waitFor();
  observations.alertCells = await row.locator("td").allInnerTexts();
  await page.screenshot({ path: join(config.artifacts, "alerts.png"), fullPage: true });

  step("acknowledge it: the badge goes");
  await row.getByRole("button", { name: /^Acknowledge alert/ }).click();
  await row.getByText(/^acknowledged /).waitFor();
  await badge.waitFor({ state: "detached" });
  observations.badgeAfterAck = await page.getByRole("button", { name: /open budget alert/ }).count();

  step("a new budget in the editor: a bad rule is refused before sending");
  await page.getByRole("button", { name: "New budget" }).click();
  const form = page.getByRole("form", { name: "New budget" });
  await form.getByLabel("Name", { exact: true }).fill("digits family");
  await form.getByLabel("Applies to").selectOption("family");
  await form.getByLabel("Name prefix").fill("digits");
  await form.getByLabel(/^Rules/).fill("kl_mean <= abc");
  await form.getByRole("button", { name: "Add budget" }).click();
  observations.badRule = await form.getByRole("alert").innerText();
  await form.getByLabel(/^Rules/).fill("kl_mean <= 0.05\ntop1_match >= 0.99");
  await form.getByRole("button", { name: "Add budget" }).click();
  await form.waitFor({ state: "detached" });
  const made = page.locator("section[aria-labelledby=budgets-heading] tbody tr", { hasText: "digits family" });
  await made.waitFor();
  observations.budgetCells = await made.locator("td").allInnerTexts();
  await page.screenshot({ path: join(config.artifacts, "budgets.png"), fullPage: true });
});
