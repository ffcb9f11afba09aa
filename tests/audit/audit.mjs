// The UI audit: Lighthouse (performance, accessibility, best practices) on the home, job and
// libraries pages as a phone and as a desktop, and axe-core on every page at both sizes, in
// Debian's Chromium. Prints a table of scores and every finding that fails; exits 1 if a score
// is under its floor or axe finds a serious or critical violation.
//
// usage: node tests/audit/audit.mjs BASE_URL JOB_ID [OUT_DIR]
import fs from "node:fs";
import path from "node:path";
import lighthouse from "lighthouse";
import * as chromeLauncher from "chrome-launcher";
import puppeteer from "puppeteer-core";
import desktopConfig from "lighthouse/core/config/desktop-config.js";

const [base, job, outDir = "target/audit"] = process.argv.slice(2);
if (!base || !job) {
  console.error("usage: node tests/audit/audit.mjs BASE_URL JOB_ID [OUT_DIR]");
  process.exit(2);
}
const chromePath = process.env.CHROME_PATH || "/usr/bin/chromium";
const chromeFlags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"];
const FLOORS = { performance: 0.9, accessibility: 0.95, "best-practices": 0.95 };
const lighthousePages = { home: "/", job: `/jobs/${job}`, libraries: "/libraries" };
const axePages = {
  ...lighthousePages,
  "my jobs": "/jobs",
  "new event": "/events/new",
  "my events": "/events",
  system: "/system",
  api: "/api",
  "not found": "/nonexistent",
  // An event's contribute page, when the caller made an event (scripts/test-audit.sh does).
  ...(process.env.AUDIT_CONTRIBUTE ? { contribute: process.env.AUDIT_CONTRIBUTE } : {}),
  // A board's guests' page and its printer station, opened by their links.
  ...(process.env.AUDIT_BOARD ? { "board contribute": process.env.AUDIT_BOARD } : {}),
  ...(process.env.AUDIT_PRINTER ? { printer: process.env.AUDIT_PRINTER } : {}),
};
fs.mkdirSync(outDir, { recursive: true });
const problems = [];
// One check per Lighthouse run and per axe page view: "audit: N passed, M failed" at the end.
let passed = 0;
let failed = 0;

// Lighthouse: each page as a phone (its default) and as a desktop; a run under a floor is run
// up to twice more (the machine may be busy) and the best kept.
const chrome = await chromeLauncher.launch({ chromePath, chromeFlags });
const rows = [];
try {
  for (const [name, url] of Object.entries(lighthousePages)) {
    for (const formFactor of ["mobile", "desktop"]) {
      let best = null;
      for (let attempt = 0; attempt < 3; attempt++) {
        const config = formFactor === "desktop" ? desktopConfig : undefined;
        const result = await lighthouse(base + url, {
          port: chrome.port,
          output: "json",
          logLevel: "error",
          onlyCategories: Object.keys(FLOORS),
        }, config);
        const lhr = result.lhr;
        const scores = Object.fromEntries(Object.keys(FLOORS).map((c) => [c, lhr.categories[c].score]));
        if (!best || Object.keys(FLOORS).every((c) => scores[c] >= best.scores[c])) best = { scores, lhr };
        if (Object.keys(FLOORS).every((c) => scores[c] >= FLOORS[c])) break;
      }
      fs.writeFileSync(path.join(outDir, `lighthouse-${name.replace(" ", "-")}-${formFactor}.json`), JSON.stringify(best.lhr));
      rows.push({ name, formFactor, scores: best.scores });
      const before = problems.length;
      for (const [category, floor] of Object.entries(FLOORS)) {
        if (best.scores[category] < floor) {
          const failing = best.lhr.categories[category].auditRefs
            .map((ref) => best.lhr.audits[ref.id])
            .filter((a) => a.score !== null && a.score < 1 && a.scoreDisplayMode !== "informative")
            .map((a) => `${a.id} (${a.title}${a.displayValue ? ": " + a.displayValue : ""})`);
          problems.push(`Lighthouse ${name} ${formFactor}: ${category} ${Math.round(best.scores[category] * 100)} < ${floor * 100}; failing audits: ${failing.join("; ")}`);
        }
      }
      if (problems.length === before) passed++;
      else failed++;
    }
  }
} finally {
  await chrome.kill();
}
const table = ["| page | form factor | performance | accessibility | best practices |", "|---|---|---|---|---|"]
  .concat(rows.map((r) => `| ${r.name} | ${r.formFactor} | ${Math.round(r.scores.performance * 100)} | ${Math.round(r.scores.accessibility * 100)} | ${Math.round(r.scores["best-practices"] * 100)} |`))
  .join("\n");
console.log(table);
fs.writeFileSync(path.join(outDir, "lighthouse.md"), table + "\n");

// axe-core: every page at a desktop and a phone size.
const axeSource = fs.readFileSync(new URL("./node_modules/axe-core/axe.min.js", import.meta.url), "utf8");
const browser = await puppeteer.launch({ executablePath: chromePath, headless: true, args: chromeFlags.slice(1) });
let checked = 0;
try {
  for (const viewport of [
    { name: "desktop", width: 1366, height: 900 },
    { name: "phone", width: 360, height: 740, isMobile: true, hasTouch: true, deviceScaleFactor: 3 },
  ]) {
    for (const [name, url] of Object.entries(axePages)) {
      const page = await browser.newPage();
      await page.setViewport(viewport);
      await page.goto(base + url, { waitUntil: "networkidle0" });
      await page.evaluate(axeSource);
      const violations = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ["violations"] });
        return r.violations.map((v) => ({
          id: v.id, impact: v.impact, help: v.help,
          nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
        }));
      });
      checked++;
      let serious = 0;
      for (const v of violations) {
        const line = `axe ${name} (${viewport.name}): ${v.impact} ${v.id}: ${v.help} at ${v.nodes.join(", ")}`;
        if (v.impact === "serious" || v.impact === "critical") {
          problems.push(line);
          serious++;
        } else {
          console.log(line);
        }
      }
      if (serious) failed++;
      else passed++;
      await page.close();
    }
  }
} finally {
  await browser.close();
}
console.log(`axe: ${checked} page views checked`);
if (problems.length) console.log(problems.join("\n"));
console.log(`audit: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
