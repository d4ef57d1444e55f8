// Drives the report's match correction for tests/browser/test_match_correction_browser.py: on the demo
// fidelity report, pair an unmatched golden layer with a compressed layer still in use (the page refuses it),
// unmatch that layer's pair (accepted), look at both graphs side by side with the pending matching and the
// lines between them, pair a layer by clicking in the graphs (refused: its target is taken) and back, re-run,
// then the model page's side-by-side mode for the same job (lines follow a pan).
//
//   node drive_match_correction.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//     "password": P, "job": JOB_ID, "golden": MODEL_ID, "pairGolden": NAME, "target": NAME, "unmatch": NAME,
//     "pick": NODE, "pendingPick": NODE, "pickLayer": NAME, "pickTarget": NAME}'
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

/** The lines drawn between the two graphs: [golden box, compressed box, selected], once a click's focus (a
 * timeout, then a frame) and the redraw it triggers (another frame) have been drawn. */
const lines = async (root) => {
  const page = "page" in root ? root.page() : root;
  await page.waitForTimeout(50);
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  return root
    .locator("[data-testid=graph-link-lines] line")
    .evaluateAll((list) =>
      list.map((l) => [l.getAttribute("data-golden"), l.getAttribute("data-compressed"), l.classList.contains("selected")]),
    );
};

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
  seen.pendingLines = await lines(section);

  step(`pair ${config.pickLayer} by clicking in the graphs: with the corrected layer's target, then back`);
  const pairTools = section.getByTestId("graph-pair-by-click");
  const pairBoth = async (compressedNode, compressedLayer) => {
    await section.locator(`.graph-pane[data-side=golden] [data-node="${config.pick}"]`).click();
    await section.locator(`.graph-pane[data-side=compressed] [data-node="${compressedNode}"]`).click();
    for (const [side, layer] of [["Golden", config.pickLayer], ["Compressed", compressedLayer]]) {
      const choose = pairTools.getByLabel(new RegExp(`^${side} layer of `));
      if (await choose.count()) await choose.selectOption(layer);
    }
    const text = await pairTools.textContent();
    await pairTools.getByRole("button", { name: "Pair these" }).click();
    return text;
  };
  await section.locator(`.graph-pane[data-side=golden] [data-node="${config.pick}"]`).click();
  const pickPanes = await panes(section);
  const pickTarget = pickPanes.compressed.linked[0];
  const targetNode = seen.pendingPanes.compressed.linked[0];
  seen.clickPairText = await pairBoth(targetNode, config.target);
  await section.getByRole("alert").waitFor();
  seen.clickPairConflict = await section.getByRole("alert").textContent();
  seen.clickPairRow = await section.locator(`tbody tr[data-golden="${config.pickLayer}"] td`).nth(2).textContent();
  seen.clickBackText = await pairBoth(pickTarget, config.pickTarget);
  await section.getByRole("alert").waitFor({ state: "detached" });
  seen.nameMapAfterClicks = JSON.parse(await section.getByTestId("match-name-map").textContent());
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
  seen.modelLines = await lines(page);
  // Pan the golden graph far right: its boxes leave the canvas and their lines go with them.
  const canvas = page.locator(".graph-pane[data-side=golden] svg.graph-canvas");
  const box = await canvas.boundingBox();
  for (let i = 0; i < 3; i += 1) {
    await page.mouse.move(box.x + 10, box.y + 20);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width - 10, box.y + 20, { steps: 5 });
    await page.mouse.up();
  }
  seen.linesAfterPan = await lines(page);
  await page.locator(".graph-pane[data-side=golden] h4").getByRole("button", { name: "Fit" }).click();
  seen.linesAfterFit = await lines(page);
  // Clicking the linked compressed node selects it there and links back to the golden node.
  const linked = seen.modelPanes.compressed?.linked?.[0];
  if (linked) {
    await page.locator(`.graph-pane[data-side=compressed] [data-node="${linked}"]`).click();
    seen.backPanes = await panes(page);
  }
  await page.screenshot({ path: join(config.artifacts, "side-by-side.png"), fullPage: true });
}, { viewport: { width: 1440, height: 1000 } });
