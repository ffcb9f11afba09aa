// Time-to-sharp in the job page's viewer after a fast zoom: a headless Chromium (puppeteer-core,
// from tests/audit's npm packages) opens the job page, turns the mouse wheel 24 notches 40 ms
// apart over a point of the mosaic, and measures from the last notch until the viewer says
// every tile of the level it wants is shown (`data-sharp`). Each run zooms on another point,
// in a fresh browser context (empty cache), so its tiles are asked for the first time.
//
// usage: [NOTCHES=24] node scripts/bench-viewer.mjs BASE_URL JOB_ID [RUNS]
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../tests/audit/package.json"));
const puppeteer = require("puppeteer-core");

const [base, job, runsArg] = process.argv.slice(2);
if (!base || !job) {
  console.error("usage: node scripts/bench-viewer.mjs BASE_URL JOB_ID [RUNS]");
  process.exit(2);
}
const runs = Number(runsArg || 5);
// Wheel notches per zoom (NOTCHES=8 ends on a coarse level of the pyramid).
const NOTCHES = Number(process.env.NOTCHES || 24);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const results = [];
try {
  for (let run = 0; run < runs; run++) {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 1366, height: 900 });
    let tileRequests = 0;
    page.on("request", (r) => { if (r.url().includes("/tiles/")) tileRequests++; });
    await page.evaluateOnNewDocument(() => {
      window.__lastWheel = 0;
      window.__sharpAt = 0;
      addEventListener("wheel", () => { window.__lastWheel = performance.now(); window.__sharpAt = 0; }, true);
      new MutationObserver(() => {
        const v = document.getElementById("viewer");
        if (v && v.dataset.sharp === "true" && !window.__sharpAt) window.__sharpAt = performance.now();
        if (v && v.dataset.sharp !== "true") window.__sharpAt = 0;
      }).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-sharp"] });
    });
    await page.goto(`${base}/jobs/${job}`, { waitUntil: "load" });
    await page.waitForFunction(() => {
      const i = document.getElementById("mosaic");
      return i && i.complete && i.naturalWidth > 0 && document.getElementById("viewer").dataset.zoom;
    }, { timeout: 60000 });
    await page.$eval("#viewer", (v) => v.scrollIntoView({ block: "center" }));
    const box = await (await page.$("#viewer")).boundingBox();
    // A different point of the mosaic each run, away from the edges.
    const fx = [0.5, 0.3, 0.7, 0.4, 0.6, 0.35, 0.65][run % 7];
    const fy = [0.5, 0.6, 0.4, 0.3, 0.7, 0.45, 0.55][run % 7];
    await page.mouse.move(box.x + box.width * fx, box.y + box.height * fy);
    tileRequests = 0;
    for (let i = 0; i < NOTCHES; i++) {
      await page.mouse.wheel({ deltaY: -100 });
      await new Promise((r) => setTimeout(r, 40));
    }
    await page.waitForFunction(() => window.__sharpAt > window.__lastWheel, { timeout: 60000, polling: 20 });
    const [ms, zoom] = await page.evaluate(() => [
      window.__sharpAt - window.__lastWheel,
      Number(document.getElementById("viewer").dataset.zoom),
    ]);
    if (!(zoom > 2)) throw new Error(`the wheel did not zoom (zoom ${zoom})`);
    results.push({ run: run + 1, ms: Math.round(ms), zoom, tileRequests });
    console.log(`run ${run + 1}: sharp ${Math.round(ms)} ms after the last notch (zoom ${zoom.toFixed(1)}x, ${tileRequests} tile requests)`);
    await context.close();
  }
} finally {
  await browser.close();
}
const sorted = results.map((r) => r.ms).sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)];
console.log(`time to sharp after a fast zoom: median ${median} ms of ${runs} (min ${sorted[0]}, max ${sorted[sorted.length - 1]})`);
