// Drives the sample inspector's media views for tests/browser/test_task_media_browser.py: a segmentation job's
// label maps (loaded pictures, the opacity slider), an image-output job's three pictures (loaded, zoomed
// together) and a signal job's three WAVs, fetched and decoded by the browser's own audio decoder.
//
//   node drive_task_media.mjs '{"base": URL, "chromium": PATH, "artifacts": DIR, "username": NAME,
//                               "password": PASSWORD, "segmentation": ID, "image": ID, "signal": ID,
//                               "sample": INDEX, "sampleRate": HZ}'
//
// Prints one JSON line of observations; exits non-zero on the first failed step.
import { join } from "node:path";
import { runSignedIn, startDriver } from "./browser_support.mjs";

const observations = { steps: [], consoleErrors: [] };
const { config, step } = startDriver("task-media", observations);

/** Every <img> under `selector` once loaded: [naturalWidth, naturalHeight, rendered width, opacity]. */
async function loadedImages(page, selector) {
  await page.waitForFunction(
    (sel) => {
      const imgs = [...document.querySelectorAll(sel)];
      return (
        imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0)
      );
    },
    selector,
    { timeout: 60_000 },
  );
  return page.$$eval(selector, (imgs) =>
    imgs.map((i) => [
      i.naturalWidth,
      i.naturalHeight,
      Math.round(i.getBoundingClientRect().width),
      Number(getComputedStyle(i).opacity),
    ]),
  );
}

/** Open the job's report on the sample, and wait for `ready` (the hash changes inside one page: the previous
 * job's inspector is still there until the new one renders). */
const open = async (page, jobId, ready) => {
  await page.goto(`${config.base}/#/jobs/${jobId}?sample=${config.sample}`);
  await page.locator(ready).first().waitFor({ timeout: 60_000 });
};

await runSignedIn(config, observations, step, async (page) => {
  step("segmentation: the three label maps load over the picture");
  await open(page, config.segmentation, "[data-testid=mask-golden] img");
  const maps = "[data-testid^=mask-] img[alt$='label map']";
  observations.maskRoles = await page
    .locator("[data-testid^=mask-]")
    .evaluateAll((fs) => fs.map((f) => f.dataset.testid));
  observations.masks = await loadedImages(page, maps);
  await page
    .locator("[data-testid=sample-inspector]")
    .getByLabel("Mask opacity")
    .fill("20");
  await page.waitForFunction(
    (sel) =>
      [...document.querySelectorAll(sel)].every(
        (i) => getComputedStyle(i).opacity === "0.2",
      ),
    maps,
    { timeout: 10_000 },
  );
  observations.masksAfterOpacity = await loadedImages(page, maps);
  await page
    .locator("[data-testid=sample-inspector] label", {
      hasText: "pixels where the models differ",
    })
    .locator("input")
    .check();
  observations.disagreementLayers = await loadedImages(
    page,
    "img[alt='pixels where the models differ']",
  );
  observations.segmentationErrors = await page
    .locator("[data-testid=sample-inspector] .error")
    .count();
  await page.locator("[data-testid=mask-golden]").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(config.artifacts, "masks.png") });

  step(
    "image output: golden, compressed and difference load and zoom together",
  );
  await open(page, config.image, "[data-testid=picture-golden] img");
  const pictures = "[data-testid^=picture-] img";
  observations.pictureRoles = await page
    .locator("[data-testid^=picture-]")
    .evaluateAll((fs) => fs.map((f) => f.dataset.testid));
  observations.pictures = await loadedImages(page, pictures);
  await page
    .locator("[data-testid=sample-inspector]")
    .getByLabel("Zoom", { exact: true })
    .selectOption("4");
  await page.waitForFunction(
    ([sel, before]) =>
      [...document.querySelectorAll(sel)].every(
        (i) => Math.round(i.getBoundingClientRect().width) === before * 4,
      ),
    [pictures, observations.pictures[0][2]],
    { timeout: 10_000 },
  );
  observations.picturesZoomed = await loadedImages(page, pictures);
  observations.imageErrors = await page
    .locator("[data-testid=sample-inspector] .error")
    .count();
  await page.screenshot({ path: join(config.artifacts, "image-output.png") });

  step("signal: three waveforms, and each WAV decodes in the browser");
  await open(page, config.signal, "[data-testid^=signal-] audio");
  const audio = page.locator("[data-testid^=signal-] audio");
  await audio.first().waitFor({ timeout: 60_000 });
  observations.waveforms = await page
    .locator("[data-testid^=signal-] svg[role=img] path")
    .count();
  observations.audio = await audio.evaluateAll(async (elements, rate) => {
    const decoded = [];
    for (const el of elements) {
      const answer = await fetch(el.src, { credentials: "same-origin" });
      const bytes = await answer.arrayBuffer();
      const context = new OfflineAudioContext(1, 1, rate);
      const buffer = await context.decodeAudioData(bytes);
      decoded.push({
        label: el.getAttribute("aria-label"),
        status: answer.status,
        type: answer.headers.get("content-type"),
        frames: buffer.length,
        sampleRate: buffer.sampleRate,
        duration: buffer.duration,
      });
    }
    return decoded;
  }, config.sampleRate);
  observations.signalErrors = await page
    .locator("[data-testid=sample-inspector] .error")
    .count();
  await page.screenshot({ path: join(config.artifacts, "signal.png") });
});
