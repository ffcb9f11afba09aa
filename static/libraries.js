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

  // Marks `field` as the one at fault (or none) and says why in the error box.
  function fail(message, field) {
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    error.textContent = message;
    error.hidden = false;
    if (field) {
      field.setAttribute("aria-invalid", "true");
      field.focus();
    }
  }

  // The list and contact sheets, read again from the page after an import.
  async function refreshCatalogue() {
    try {
      const page = await fetch("/libraries", { credentials: "same-origin" });
      const doc = new DOMParser().parseFromString(await page.text(), "text/html");
      const fresh = doc.getElementById("catalogue");
      if (fresh) document.getElementById("catalogue").replaceWith(fresh);
    } catch (e) {
      // The report says what was imported; the list catches up on the next visit.
    }
  }

  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    error.hidden = true;
    report.hidden = true;
    const nameField = document.getElementById("name");
    const filesField = document.getElementById("files");
    if (!nameField.value.trim()) {
      fail("Give the library a name.", nameField);
      return;
    }
    if (!filesField.files.length) {
      fail("Choose a .zip or some image files with the tiles.", filesField);
      return;
    }
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    const files = filesField.files;
    const limit = Number(form.dataset.maxUpload);
    let total = 0;
    for (const f of files) total += f.size;
    if (limit > 0 && total > limit) {
      fail("The files come to " + (total / 1048576).toFixed(1) +
        " MB, over the upload limit of " + (limit / 1048576).toFixed(1) + " MB.", filesField);
      return;
    }
    const data = new FormData();
    data.append("name", nameField.value);
    data.append("shape", document.getElementById("shape").value);
    data.append("background", document.getElementById("background").value);
    if (document.getElementById("replace").checked) data.append("replace", "true");
    data.append("visibility", document.getElementById("shared").checked ? "shared" : "private");
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
      const code = body && body.error ? body.error.code : "";
      if (code === "library_exists") {
        fail("A library of that name exists. Tick “Replace” to publish a new version of it, or choose another name.", nameField);
      } else if (code === "no_images") {
        // The server's reason names the files and why each was left out.
        const why = body.error.message.replace(/^[^:]*: /, "");
        fail("None of the files could be made a tile: " + why + ".", filesField);
      } else if (code === "upload_too_large" || response.status === 413) {
        fail("The upload is over the server's limit: send fewer or smaller files.", filesField);
      } else {
        const message = body && body.error ? body.error.message : "the server answered " + response.status;
        fail("The library was not imported: " + message + ".");
      }
      return;
    }
    list.replaceChildren();
    const lib = body.library || {};
    const r = body.report || {};
    row("Library", (lib.name || "") + " (" + (lib.id || "") + ", version " + lib.version + ")");
    row("Tiles imported", String(r.imported));
    row("Files left out", String((r.skipped || []).length) + " (" + r.ignored + " of them not images)");
    (r.duplicates || []).forEach(function (d) { row("Duplicate", d.name + " (kept " + d.kept + ")"); });
    (r.skipped || []).forEach(function (s) { row("Skipped", (s.name || "") + ": " + (s.reason || "")); });
    status.textContent = "Imported " + r.imported + " tiles into " + (lib.name || "the library") +
      " (" + (r.duplicates || []).length + " duplicates, " + (r.skipped || []).length +
      " skipped); the report follows.";
    report.hidden = false;
    report.focus();
    refreshCatalogue();
  });

  // Deleting one's own library: from the catalogue, through the JSON API.
  document.addEventListener("click", async function (ev) {
    const button = ev.target.closest("#catalogue button[data-action=delete]");
    if (!button) return;
    const row = button.closest("tr");
    const id = row.dataset.library;
    const status = document.getElementById("catalogue-status");
    if (!window.confirm("Delete the library " + id + " and all its versions? This cannot be undone.")) return;
    button.disabled = true;
    status.hidden = true;
    let response = null;
    try {
      response = await fetch("/api/v1/libraries/" + encodeURIComponent(id), {
        method: "DELETE",
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
    } catch (e) {
      response = null;
    }
    if (response && (response.ok || response.status === 404)) {
      refreshCatalogue();
      return;
    }
    let message = response ? "The server answered " + response.status + "." : "The server could not be reached.";
    try {
      const body = await response.json();
      message = body.error.code === "library_in_use"
        ? "A mosaic is being made from this library: delete it once that mosaic is done."
        : body.error.message;
    } catch (e) {
      // Keep the message above.
    }
    status.textContent = message;
    status.hidden = false;
    button.disabled = false;
  });
})();
