"use strict";
// The library upload form: posts to the JSON API and shows the import report.
(function () {
  const form = document.getElementById("library-form");
  const error = document.getElementById("error");
  const report = document.getElementById("report");
  const list = document.getElementById("report-list");

  function row(term, value) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = value;
    list.append(dt, dd);
  }

  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    error.hidden = true;
    report.hidden = true;
    const files = document.getElementById("files").files;
    const limit = Number(form.dataset.maxUpload);
    let total = 0;
    for (const f of files) total += f.size;
    if (limit > 0 && total > limit) {
      error.textContent = "The files come to " + (total / 1048576).toFixed(1) +
        " MB, over the upload limit of " + (limit / 1048576).toFixed(1) + " MB.";
      error.hidden = false;
      return;
    }
    const data = new FormData();
    data.append("name", document.getElementById("name").value);
    for (const f of files) data.append("files", f, f.name);
    const button = form.querySelector("button");
    button.disabled = true;
    let response, body = null;
    try {
      response = await fetch("/api/v1/libraries", {
        method: "POST",
        body: data,
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
      try { body = await response.json(); } catch (e) { body = null; }
    } catch (e) {
      error.textContent = "The server could not be reached.";
      error.hidden = false;
      button.disabled = false;
      return;
    }
    button.disabled = false;
    if (!response.ok) {
      error.textContent = body && body.error ? body.error.message : "The server answered " + response.status + ".";
      error.hidden = false;
      return;
    }
    list.replaceChildren();
    const lib = body.library || {};
    const r = body.report || {};
    row("Library", (lib.name || "") + " (" + (lib.id || "") + ", version " + lib.version + ")");
    row("Tiles imported", String(r.imported));
    row("Not images (ignored)", String(r.ignored));
    (r.duplicates || []).forEach(function (d) { row("Duplicate", d.name + " (kept " + d.kept + ")"); });
    (r.skipped || []).forEach(function (s) { row("Skipped", (s.name || "") + ": " + (s.reason || "")); });
    report.hidden = false;
    report.focus();
  });
})();
