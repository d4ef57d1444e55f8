// Drives the management actions for tests/browser/test_manage.py: on the demo project, rename and tag a job,
// filter the job list (tag, text, kind), relaunch the job, rename a model, delete a job and a model through
// their confirm dialogs ("Keep it" first, which must keep them), and read the projects list's counts. At a
// phone's width (390 px) the project page and the edit dialog must not overflow.
//
//   node drive_manage.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                           "password": PASSWORD, "ids": {"project", "job", "model", "doomedModel"}}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [], layout: {} };
const { config, step } = startDriver("manage", observations);
const ids = config.ids;

/** The document's width and the outermost elements sticking out of the viewport (outside scroll boxes). */
function overflow() {
  const vw = document.documentElement.clientWidth;
  const scrolls = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip") return true;
    }
    return false;
  };
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    const parent = el.parentElement?.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1 && (!parent || parent.right <= vw + 1) && !scrolls(el))
      wide.push(`${el.tagName.toLowerCase()}.${String(el.className)} right=${Math.round(r.right)}`);
    if (wide.length >= 8) break;
  }
  const dialog = document.querySelector("dialog[open]")?.getBoundingClientRect();
  return {
    scrollWidth: document.documentElement.scrollWidth,
    viewport: vw,
    wide,
    dialog: dialog ? { left: Math.round(dialog.left), right: Math.round(dialog.right) } : null,
  };
}

await runSignedIn(config, observations, step, async (page) => {

  step("projects list: counts and last activity");
  const row = page.locator(`tr[data-project-id="${ids.project}"]`);
  await row.waitFor();
  observations.projectRow = await row.locator("td").allInnerTexts();
  observations.projectHeaders = await page.locator("table[aria-label=Projects] th").allInnerTexts();

  step("project page");
  await page.goto(`${config.base}/#/projects/${ids.project}`);
  const jobs = page.locator("table.jobs");
  const jobRow = jobs.locator(`tr[data-job-id="${ids.job}"]`);
  await jobRow.waitFor();
  observations.launchedBy = (await jobRow.locator(".launched-by").innerText()).trim();

  step("rename, tag and annotate the job");
  await jobRow.getByRole("button", { name: /^Edit / }).click();
  const edit = page.getByRole("dialog", { name: /^Edit / });
  await edit.getByLabel("Name").fill("baseline int8");
  await edit.getByLabel("Notes").fill("the demo's first run");
  await edit.getByLabel(/^Tags/).fill("int8, release-1 int8");
  await edit.getByRole("button", { name: "Save" }).click();
  await edit.waitFor({ state: "detached" });
  await jobRow.locator(".job-name", { hasText: "baseline int8" }).waitFor();
  observations.jobTags = await jobRow.locator(".tags li").allInnerTexts();
  observations.jobNotes = await jobRow.locator(".notes-text").innerText();

  step("a bad tag is refused before saving");
  await jobRow.getByRole("button", { name: /^Edit / }).click();
  const again = page.getByRole("dialog", { name: /^Edit / });
  await again.getByLabel(/^Tags/).fill('int8 "quoted"');
  observations.badTag = {
    alert: await again.getByRole("alert").innerText(),
    saveDisabled: await again.getByRole("button", { name: "Save" }).isDisabled(),
  };
  await again.getByRole("button", { name: "Cancel" }).click();
  await again.waitFor({ state: "detached" });

  const rowCount = async () => {
    await page.waitForLoadState("networkidle");
    return jobs.locator("tbody tr").count();
  };
  const filters = page.getByRole("search", { name: "Filter jobs" });
  step("filter by tag");
  observations.unfilteredRows = await rowCount();
  await filters.getByLabel("Tag").fill("release-1");
  await filters.getByRole("button", { name: "Filter" }).click();
  await page.waitForFunction(() => document.querySelectorAll("table.jobs tbody tr").length === 1);
  observations.tagRows = await jobs.locator("tbody tr").getAttribute("data-job-id");
  step("filter by text and kind");
  await filters.getByLabel("Tag").fill("");
  await filters.getByLabel("Name or notes").fill("DEMO'S FIRST");
  await filters.getByRole("button", { name: "Filter" }).click();
  await page.waitForFunction(() => document.querySelectorAll("table.jobs tbody tr").length === 1);
  observations.textRows = await jobs.locator("tbody tr").getAttribute("data-job-id");
  await filters.getByLabel("Kind").selectOption("sensitivity");
  await page.getByText("No job matches these filters.").waitFor();
  await filters.getByRole("button", { name: "Clear" }).click();
  await page.waitForFunction(
    (n) => document.querySelectorAll("table.jobs tbody tr").length === n,
    observations.unfilteredRows,
  );

  step("relaunch the job");
  await jobRow.getByRole("button", { name: /^Relaunch / }).click();
  await jobRow.getByText(/^Relaunched as job/).waitFor();
  await page.waitForFunction(
    () => [...document.querySelectorAll("table.jobs .job-name")].filter((e) => e.textContent === "baseline int8").length === 2,
  );
  observations.relaunchedId = await jobs.locator("tbody tr").first().getAttribute("data-job-id");

  step("rename a model");
  const modelRow = page.locator(`tr[data-model-id="${ids.model}"]`);
  await modelRow.getByRole("button", { name: /^Edit / }).click();
  const modelEdit = page.getByRole("dialog", { name: /^Edit model/ });
  await modelEdit.getByLabel("Name").fill("int8 (renamed)");
  await modelEdit.getByRole("button", { name: "Save" }).click();
  await modelEdit.waitFor({ state: "detached" });
  // The list shows the new name once its refetch after the save lands (slower than the dialog's closing on
  // a loaded machine: CI read the old name once); a rename that did not happen times out here.
  await modelRow.locator("td a", { hasText: "int8 (renamed)" }).first().waitFor();
  observations.modelName = await modelRow.locator("td a").first().innerText();
  // The job rows name models by their current name.
  await jobRow.getByText("int8 (renamed)").first().waitFor();

  step("delete the relaunched job: keep it first, then delete");
  const relaunched = jobs.locator(`tr[data-job-id="${observations.relaunchedId}"]`);
  await relaunched.getByRole("button", { name: /^Delete / }).click();
  const confirm = page.getByRole("dialog", { name: /^Delete / });
  observations.confirmText = await confirm.innerText();
  await confirm.getByRole("button", { name: "Keep it" }).click();
  await confirm.waitFor({ state: "detached" });
  observations.keptAfterCancel = await relaunched.count();
  await relaunched.getByRole("button", { name: /^Delete / }).click();
  await page.getByRole("dialog", { name: /^Delete / }).getByRole("button", { name: "Delete" }).click();
  await relaunched.waitFor({ state: "detached" });

  step("delete a model");
  const doomed = page.locator(`tr[data-model-id="${ids.doomedModel}"]`);
  await doomed.getByRole("button", { name: /^Delete / }).click();
  await page.getByRole("dialog", { name: /^Delete model/ }).getByRole("button", { name: "Delete" }).click();
  await doomed.waitFor({ state: "detached" });
  await page.screenshot({ path: join(config.artifacts, "desktop-project.png"), fullPage: true });
  observations.layout.desktop = await page.evaluate(overflow);

  step("phone: the project page and the edit dialog fit 390 px");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await jobRow.waitFor();
  await page.waitForLoadState("networkidle");
  observations.layout.phone = await page.evaluate(overflow);
  await page.screenshot({ path: join(config.artifacts, "phone-project.png"), fullPage: true });
  await jobRow.getByRole("button", { name: /^Edit / }).click();
  await page.getByRole("dialog", { name: /^Edit / }).waitFor();
  observations.layout.phoneDialog = await page.evaluate(overflow);
  await page.screenshot({ path: join(config.artifacts, "phone-edit-dialog.png") });
  await page.keyboard.press("Escape");
  await page.getByRole("dialog").waitFor({ state: "detached" });
  await page.goto(`${config.base}/#/`);
  await row.waitFor();
  observations.layout.phoneProjects = await page.evaluate(overflow);

  step("the per-sample table's CSV on the report page");
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${config.base}/#/jobs/${ids.job}`);
  const csvLink = page.getByRole("link", { name: "CSV of all samples" });
  await csvLink.waitFor();
  const samplesHref = await csvLink.getAttribute("href");
  observations.samplesCsv = await page.evaluate(async (url) => {
    const response = await fetch(url);
    return { status: response.status, href: url, text: await response.text() };
  }, samplesHref);

  step("the audit trail filtered by person, project and day, and its CSV");
  await page.goto(`${config.base}/#/teams/${ids.team}`);
  const audit = page.getByRole("table", { name: "Audit trail" });
  await audit.locator("tbody tr").first().waitFor();
  const auditFilters = page.getByRole("search", { name: "Filter the audit trail" });
  await auditFilters.getByLabel("Who").fill("ADMIN");
  await auditFilters.getByLabel("Project").selectOption({ label: "demo" });
  await auditFilters.getByLabel("From").fill(config.today);
  await auditFilters.getByLabel("To").fill(config.today);
  await auditFilters.getByRole("button", { name: "Filter" }).click();
  await page.getByLabel(/^Action/).selectOption("job.updated");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table[aria-label="Audit trail"]:not(.stale) tbody tr')];
    return rows.length > 0 && rows.every((r) => r.dataset.action === "job.updated");
  });
  observations.auditRows = await audit.locator("tbody tr").evaluateAll((rows) =>
    rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent.trim())),
  );
  const auditHref = await page.getByRole("link", { name: "Download these events as CSV" }).getAttribute("href");
  observations.auditCsv = await page.evaluate(async (url) => {
    const response = await fetch(url);
    return { status: response.status, href: url, text: await response.text() };
  }, auditHref);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForLoadState("networkidle");
  observations.layout.phoneTeam = await page.evaluate(overflow);
  await page.screenshot({ path: join(config.artifacts, "phone-team-audit.png"), fullPage: true });
});
