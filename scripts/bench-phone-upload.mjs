// What a phone sends to make a library of its photos: a headless Chromium (puppeteer-core, from
// tests/audit's npm packages) as a 390 x 844 phone opens the libraries page, chooses the photos
// and sends them. Every request the page makes is counted on its way out: its files and their
// bytes, which the page has reduced before sending. Prints one JSON line: the photos' bytes
// on disk, the bytes sent, the requests, the seconds from the click to the report, and the
// tiles the report counts.
//
// usage: node scripts/bench-phone-upload.mjs BASE_URL LIBRARY_NAME PHOTO...
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../tests/audit/package.json"));
const puppeteer = require("puppeteer-core");

const [base, name, ...photos] = process.argv.slice(2);
if (!base || !name || !photos.length) {
  console.error("usage: node scripts/bench-phone-upload.mjs BASE_URL LIBRARY_NAME PHOTO...");
  process.exit(2);
}
const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  protocolTimeout: 3_600_000,
});
try {
  const page = await browser.newPage();
  await page.emulate({
    viewport: { width: 390, height: 844, deviceScaleFactor: 3, isMobile: true, hasTouch: true },
    userAgent: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
  });
  // Each request's files, counted as the page hands them to the network.
  await page.evaluateOnNewDocument(() => {
    window.__sent = [];
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (data) {
      if (data instanceof FormData) {
        const files = data.getAll("files");
        window.__sent.push({ files: files.length, bytes: files.reduce((s, f) => s + f.size, 0) });
      }
      return send.call(this, data);
    };
  });
  await page.goto(`${base}/libraries`, { waitUntil: "load" });
  await page.type("#name", name);
  const input = await page.$("#files");
  await input.uploadFile(...photos);
  const started = performance.now();
  await page.click("#library-form button[type=submit]");
  await page.waitForFunction(() => !document.getElementById("report").hidden, {
    timeout: 3_600_000,
    polling: 500,
  });
  const seconds = (performance.now() - started) / 1000;
  const report = await page.$eval("#report", (r) => r.innerText);
  const sent = await page.evaluate(() => window.__sent);
  const tiles = Number((report.match(/Tiles imported\s+(\d+)/) || [])[1] || 0);
  console.log(JSON.stringify({
    photos: photos.length,
    bytes_on_disk: photos.reduce((s, p) => s + fs.statSync(p).size, 0),
    bytes_sent: sent.reduce((s, r) => s + r.bytes, 0),
    requests: sent.length,
    files_sent: sent.reduce((s, r) => s + r.files, 0),
    seconds: Number(seconds.toFixed(1)),
    tiles,
  }));
} finally {
  await browser.close();
}
