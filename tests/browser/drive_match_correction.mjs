// Drives the report's match correction for tests/browser/test_match_correction_browser.py: on the demo
// fidelity report, pair an unmatched golden layer with a compressed layer still in use (the page refuses it),
// unmatch that layer's pair (accepted), look at both graphs side by side with the pending matching, re-run,
// then the model page's side-by-side mode for the same job.
//
//   node drive_match_correction.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//     "password": P, "job": JOB_ID, "golden": MODEL_ID, "pairGolden": NAME, "target": NAME, "unmatch": NAME,
//     "pick": NODE, "pendingPick": NODE}'
//
// Prints one JSON line of observations (with "error" when a step failed).
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const seen = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("match", seen);

/** Per pane (under a page or a locator): drawn boxes, boxes marked unmatched, the selected / linked boxes. */
const panes = (root) =>
  root.locator(".graph-pane").evaluateAll((list) =>
    Object.fromEntries(
      list.map((pane) => [
        pane.getAttribute("data-side"),
        {
          boxes: pane.querySelectorAll("[data-node]").length,
          unmatched: [...pane.querySelectorAll("[data-node].unmatched")].map((b) => b.getAttribute("data-node")),
          selected: [...pane.querySelectorAll("[data-node].selected")].map((b) => b.getAttribute("data-node")),
          linked: [...pane.querySelectorAll("[data-node].linked")].map((b) => b.getAttribute("data-node")),
        },
      ]),
    ),
  );

await runSignedIn(config, seen, step, async (page) => {

  step("the demo report's layer matching");
  await page.goto(`${config.base}/#/jobs/${config.job}`);
  const section = page.locator("section.match-correction");
  await section.waitFor();
  seen.summary = await section.getByTestId("match-summary").textContent();
  seen.rows = await section.locator("tbody tr").evaluateAll((rows) =>
    rows.map((r) => [r.getAttribute("data-golden"), r.querySelectorAll("td")[2].textContent, r.querySelectorAll("td")[3].textContent]),
  );
  const launch = section.getByRole("button", { name: /^Re-run with this matching/ });
  seen.launchDisabledAtFirst = await launch.isDisabled();

  step(`pair ${config.pairGolden} with ${config.target}, still used by ${config.unmatch}`);
  const pairRow = section.locator(`tbody tr[data-golden="${config.pairGolden}"]`);
  await pairRow.getByRole("button", { name: "Pair" }).click();
  await pairRow.getByRole("combobox").selectOption(config.target);
  await section.getByRole("alert").waitFor();
  seen.conflict = await section.getByRole("alert").textContent();
  seen.launchDisabledOnConflict = await launch.isDisabled();

  step(`unmatch ${config.unmatch}`);
  await section.locator(`tbody tr[data-golden="${config.unmatch}"]`).getByRole("button", { name: "Unmatch" }).click();
  await section.getByRole("alert").waitFor({ state: "detached" });
  seen.launchDisabledWhenValid = await launch.isDisabled();
  seen.rowsAfter = await section.locator("tbody tr").evaluateAll((rows) =>
    rows.map((r) => [r.getAttribute("data-golden"), r.querySelectorAll("td")[2].textContent, r.querySelectorAll("td")[3].textContent]),
  );
  await section.getByText(/^The name map the re-run gets/).click();
  seen.nameMap = JSON.parse(await section.getByTestId("match-name-map").textContent());

  step("both graphs side by side, with the pending matching");
  await section.getByText("Both graphs side by side, with this matching").click();
  await section.locator(".graph-pane[data-side=compressed] [data-node]").first().waitFor();
  seen.pendingLinks = await section.getByTestId("graph-links").textContent();
  await section.locator(`.graph-pane[data-side=golden] [data-node="${config.pendingPick}"]`).click();
  await section.getByTestId("graph-selection").waitFor();
  seen.pendingSelection = await section.getByTestId("graph-selection").textContent();
  seen.pendingPanes = await panes(section);
  await page.screenshot({ path: join(config.artifacts, "match-correction.png"), fullPage: true });

  step("re-run with the corrected matching");
  await launch.click();
  const launched = section.getByTestId("match-relaunched");
  await launched.waitFor();
  seen.launchedJob = await launched.getAttribute("data-job-id");

  step("the model page's side-by-side mode");
  await page.goto(`${config.base}/#/models/${config.golden}`);
  await page.getByLabel("Graph mode").locator(`option[value="${config.job}"]`).waitFor({ state: "attached" });
  await page.getByLabel("Graph mode").selectOption(config.job);
  await page.locator(".graph-pane[data-side=compressed] [data-node]").first().waitFor();
  seen.modelLinks = await page.getByTestId("graph-links").textContent();
  await page.locator(`.graph-pane[data-side=golden] [data-node="${config.pick}"]`).click();
  seen.modelSelection = await page.getByTestId("graph-selection").textContent();
  seen.modelPanes = await panes(page);
  // Clicking the linked compressed node selects it there and links back to the golden node.
  const linked = seen.modelPanes.compressed?.linked?.[0];
  if (linked) {
    await page.locator(`.graph-pane[data-side=compressed] [data-node="${linked}"]`).click();
    seen.backPanes = await panes(page);
  }
  await page.screenshot({ path: join(config.artifacts, "side-by-side.png"), fullPage: true });
}, { viewport: { width: 1440, height: 1000 } });
