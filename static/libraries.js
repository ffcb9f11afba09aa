"use strict";
// The library upload form: posts to the JSON API, shows the upload's progress, then the
// import report.
(function () {
  const form = document.getElementById("library-form");
  const error = document.getElementById("error");
  const report = document.getElementById("report");
  const list = document.getElementById("report-list");
  const upload = document.getElementById("upload");
  const bar = document.getElementById("upload-progress");
  const status = document.getElementById("upload-status");

  function row(term, value) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = value;
    list.append(dt, dd);
  }

  function size(bytes) {
    if (bytes < 1000) return bytes + " B";
    if (bytes < 1e6) return (bytes / 1e3).toFixed(1) + " kB";
    return (bytes / 1e6).toFixed(1) + " MB";
  }

  function sent(loaded, total) {
    bar.max = Math.max(total, 1);
    bar.value = Math.min(loaded, bar.max);
    const percent = total > 0 ? Math.floor((100 * loaded) / total) : 100;
    status.textContent = "Sent " + size(loaded) + " of " + size(total) + " (" + percent + "%).";
  }

  // Posts `data`, reporting upload progress; resolves with the status and parsed JSON body
  // (null if none), rejects if the server cannot be reached.
  function post(data, total) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/libraries");
      xhr.setRequestHeader("X-Requested-With", "tessera");
      xhr.upload.addEventListener("progress", function (ev) {
        sent(ev.loaded, ev.lengthComputable ? ev.total : total);
      });
      xhr.upload.addEventListener("load", function (ev) {
        const all = ev.lengthComputable ? ev.total : Math.max(ev.loaded, total);
        sent(all, all);
        status.textContent += " Importing…";
      });
      xhr.addEventListener("load", function () {
        let body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        resolve({ status: xhr.status, ok: xhr.status >= 200 && xhr.status < 300, body: body });
      });
      xhr.addEventListener("error", reject);
      xhr.addEventListener("abort", reject);
      xhr.send(data);
    });
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
    upload.hidden = false;
    sent(0, total);
    let response;
    try {
      response = await post(data, total);
    } catch (e) {
      upload.hidden = true;
      status.textContent = "";
      error.textContent = "The server could not be reached.";
      error.hidden = false;
      button.disabled = false;
      return;
    }
    button.disabled = false;
    const body = response.body;
    if (!response.ok) {
      upload.hidden = true;
      status.textContent = "";
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
    status.textContent = "Imported " + r.imported + " tiles into " + (lib.name || "the library") +
      " (" + (r.duplicates || []).length + " duplicates, " + (r.skipped || []).length +
      " skipped); the report follows.";
    report.hidden = false;
    report.focus();
  });
})();
