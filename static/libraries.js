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

  // Posts `data` to `url`, reporting upload progress from `before` bytes already sent of
  // `total`; resolves with the status and parsed JSON body (null if none), rejects if the
  // server cannot be reached.
  function post(url, data, before, total) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("X-Requested-With", "tessera");
      xhr.upload.addEventListener("progress", function (ev) {
        sent(before + ev.loaded, Math.max(total, before + (ev.lengthComputable ? ev.total : 0)));
      });
      xhr.upload.addEventListener("load", function (ev) {
        const all = Math.max(total, before + ev.loaded);
        sent(before + ev.loaded, all);
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

  // A batch sent again after a network failure, a server fault or a library changed meanwhile:
  // at most this many times, waiting 1, 2, 4 s between.
  const TRIES = 4;
  // The error code of an answer `post` resolved with ("" for none).
  function codeOf(response) {
    return response && response.body && response.body.error ? response.body.error.code : "";
  }
  function worthRetrying(response) {
    if (!response) return true;
    const code = codeOf(response);
    return response.status >= 500 || response.status === 408 || response.status === 429 ||
      code === "library_changed";
  }
  async function postWithRetry(url, data, before, total) {
    let response = null;
    for (let attempt = 0; attempt < TRIES; attempt++) {
      if (attempt > 0) {
        status.textContent = "Sending again in " + (1 << (attempt - 1)) + " s…";
        await new Promise(function (r) { setTimeout(r, 1000 << (attempt - 1)); });
      }
      try {
        response = await post(url, data, before, total);
      } catch (e) {
        response = null;
      }
      if (!worthRetrying(response)) return response;
    }
    return response;
  }

  const reduced = window.TesseraPhotos.reduced;

  // Files in batches of at most BATCH_FILES files and `limit` bytes; an archive goes alone.
  const BATCH_FILES = 24;
  function batchesOf(files, limit) {
    const batches = [];
    let batch = [];
    let bytes = 0;
    for (const f of files) {
      const alone = /\.zip$/i.test(f.file.name);
      if (batch.length && (alone || batch.length >= BATCH_FILES || bytes + f.file.size > limit)) {
        batches.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(f);
      bytes += f.file.size;
      if (alone) {
        batches.push(batch);
        batch = [];
        bytes = 0;
      }
    }
    if (batch.length) batches.push(batch);
    return batches;
  }

  // The list of files with the state of each, as they are reduced, sent and imported.
  const fileList = document.getElementById("upload-files");
  function track(files) {
    fileList.replaceChildren();
    fileList.hidden = files.length < 2;
    return Array.from(files).map(function (file) {
      const item = document.createElement("li");
      const name = document.createElement("span");
      const state = document.createElement("span");
      name.textContent = file.name;
      state.className = "hint";
      item.append(name, " ", state);
      fileList.append(item);
      const tracked = { file: file, original: file.size, item: item };
      tracked.say = function (words, outcome) {
        state.textContent = words;
        if (outcome) item.dataset.state = outcome;
      };
      tracked.say("waiting");
      return tracked;
    });
  }

  // Reduces, batches and sends `files`: the first batch to `first` (a new library), the
  // others (and all of them when `first` is null) as additions to library `id`. Resolves with
  // the last answer and the totals, or with the refusal that stopped it.
  async function sendAll(files, first, id, limit) {
    const tracked = track(files);
    for (const t of tracked) {
      t.say("reducing…");
      t.file = await reduced(t.file);
      t.say(t.file.size < t.original ? "reduced from " + size(t.original) + " to " + size(t.file.size) : "ready");
    }
    const total = tracked.reduce(function (sum, t) { return sum + t.file.size; }, 0);
    const tooLarge = limit > 0 ? tracked.find(function (t) { return t.file.size > limit; }) : null;
    if (tooLarge) {
      return { refused: "The file " + tooLarge.file.name + " is " + size(tooLarge.file.size) +
        ", over the upload limit of " + size(limit) + "." };
    }
    const totals = { imported: 0, skipped: [], duplicates: [], ignored: 0, library: null };
    let before = 0;
    let created = first === null;
    sent(0, total);
    for (const batch of batchesOf(tracked, limit > 0 ? Math.min(limit, 16 * 1048576) : 16 * 1048576)) {
      const data = new FormData();
      if (!created) first.forEach(function (pair) { data.append(pair[0], pair[1]); });
      batch.forEach(function (t) {
        data.append("files", t.file, t.file.name);
        t.say("sending…");
      });
      const bytes = batch.reduce(function (sum, t) { return sum + t.file.size; }, 0);
      const url = created ? "/api/v1/libraries/" + encodeURIComponent(id) + "/tiles" : "/api/v1/libraries";
      const response = await postWithRetry(url, data, before, total);
      before += bytes;
      const code = codeOf(response);
      if (response && response.ok) {
        const r = response.body.report || {};
        created = true;
        totals.library = response.body.library;
        id = totals.library.id;
        totals.imported += r.imported !== undefined ? r.imported : r.added;
        totals.ignored += r.ignored || 0;
        totals.skipped = totals.skipped.concat(r.skipped || []);
        totals.duplicates = totals.duplicates.concat(r.duplicates || []);
        batch.forEach(function (t) {
          const skip = (r.skipped || []).find(function (s) { return s.name.split("/").pop() === t.file.name; });
          const copy = (r.duplicates || []).find(function (d) { return d.name.split("/").pop() === t.file.name; });
          if (skip) t.say("left out: " + skip.reason, "skipped");
          else if (copy) t.say("left out: the same picture as " + copy.kept, "skipped");
          else t.say("in", "in");
        });
      } else if (code === "no_images") {
        // Nothing in this batch could be a tile; the others go on.
        const why = response.body.error.message.replace(/^[^:]*: /, "");
        batch.forEach(function (t) { t.say("left out: " + why, "skipped"); });
        batch.forEach(function (t) { totals.skipped.push({ name: t.file.name, reason: why }); });
      } else {
        batch.forEach(function (t) { t.say(response ? "not sent" : "not sent: the server could not be reached", "failed"); });
        return { response: response, totals: totals };
      }
    }
    if (!totals.library) return { refused: "None of the files could be made a tile: " +
      totals.skipped.map(function (s) { return s.name + ": " + s.reason; }).join("; ") + "." };
    return { totals: totals };
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
    const first = [
      ["name", nameField.value],
      ["shape", document.getElementById("shape").value],
      ["crop", document.getElementById("crop").value],
      ["background", document.getElementById("background").value],
      ["visibility", document.getElementById("shared").checked ? "shared" : "private"],
    ];
    if (document.getElementById("replace").checked) first.push(["replace", "true"]);
    const button = form.querySelector("button");
    button.disabled = true;
    upload.hidden = false;
    const outcome = await sendAll(files, first, null, limit);
    button.disabled = false;
    if (outcome.refused) {
      upload.hidden = true;
      status.textContent = "";
      fail(outcome.refused, filesField);
      return;
    }
    if (outcome.response !== undefined) {
      upload.hidden = true;
      status.textContent = "";
      const response = outcome.response;
      if (!response) {
        error.textContent = "The server could not be reached: the files marked “not sent” were not imported.";
        error.hidden = false;
        return;
      }
      const body = response.body;
      const code = codeOf(response);
      if (code === "library_exists") {
        fail("A library of that name exists. Tick “Replace” to publish a new version of it, or choose another name.", nameField);
      } else if (code === "upload_too_large" || response.status === 413) {
        fail("The upload is over the server's limit: send fewer or smaller files.", filesField);
      } else {
        const message = body && body.error ? body.error.message : "the server answered " + response.status;
        fail("The files marked “not sent” were not imported: " + message + ".");
      }
      if (!outcome.totals.library) return;
    }
    const body = { library: outcome.totals.library, report: outcome.totals };
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

  // Sends DELETE to `url` (one's own library, or one of its photos); resolves with the answer,
  // or null when the server cannot be reached.
  async function askDelete(url) {
    try {
      return await fetch(url, {
        method: "DELETE",
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
    } catch (e) {
      return null;
    }
  }

  // What went wrong with `response` (null: the server unreached), in the server's words where
  // it gave them, and its error code.
  async function refusal(response) {
    if (!response) return { message: "The server could not be reached.", code: "" };
    try {
      const error = (await response.json()).error;
      return { message: error.message, code: error.code };
    } catch (e) {
      return { message: "The server answered " + response.status + ".", code: "" };
    }
  }

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
    const response = await askDelete("/api/v1/libraries/" + encodeURIComponent(id));
    if (response && (response.ok || response.status === 404)) {
      refreshCatalogue();
      return;
    }
    const why = await refusal(response);
    status.textContent = why.code === "library_in_use"
      ? "A mosaic is being made from this library: delete it once that mosaic is done."
      : why.message;
    status.hidden = false;
    button.disabled = false;
  });

  // Adding photos to one's own library, from its row: reduced, batched and sent as the upload
  // form sends them, each batch a new version.
  let addingTo = null;
  document.addEventListener("click", function (ev) {
    const button = ev.target.closest("#catalogue button[data-action=add]");
    if (!button) return;
    addingTo = button.closest("tr").dataset.library;
    document.getElementById("add-files").click();
  });
  document.addEventListener("change", async function (ev) {
    if (ev.target.id !== "add-files" || !addingTo || !ev.target.files.length) return;
    const id = addingTo;
    const files = Array.from(ev.target.files);
    ev.target.value = "";
    error.hidden = true;
    report.hidden = true;
    upload.hidden = false;
    upload.scrollIntoView({ block: "center" });
    const outcome = await sendAll(files, null, id, Number(form.dataset.maxUpload));
    if (outcome.refused) {
      fail(outcome.refused);
    } else if (outcome.response !== undefined) {
      const body = outcome.response && outcome.response.body;
      fail("The photos marked “not sent” were not added: " +
        (body && body.error ? body.error.message : "the server could not be reached") + ".");
    }
    const t = outcome.totals;
    if (t && t.library) {
      status.textContent = "Added " + t.imported + " photos to " + t.library.name + " (version " +
        t.library.version + ", " + t.library.tiles + " tiles; " + t.duplicates.length +
        " duplicates, " + t.skipped.length + " skipped).";
      refreshCatalogue();
    }
  });

  // The photos of one's own library, each with a button that takes it out.
  async function showPhotos(id) {
    const section = document.getElementById("tile-list");
    const names = document.getElementById("tile-names");
    const answer = await fetch("/api/v1/libraries/" + encodeURIComponent(id) + "/tiles", { credentials: "same-origin" });
    if (!answer.ok) return;
    const body = await answer.json();
    document.getElementById("tile-list-title").textContent =
      "Photos of " + body.library.name + " (version " + body.library.version + ", " + body.tiles.length + ")";
    names.replaceChildren();
    body.tiles.forEach(function (tile) {
      const item = document.createElement("li");
      const name = document.createElement("span");
      name.textContent = tile.name;
      const out = document.createElement("button");
      out.type = "button";
      out.className = "danger";
      out.dataset.action = "take-out";
      out.dataset.library = id;
      out.dataset.tile = tile.name;
      out.textContent = "Take out";
      out.setAttribute("aria-label", "Take " + tile.name + " out");
      item.append(name, " ", out);
      names.append(item);
    });
    section.hidden = false;
    section.focus();
  }
  document.addEventListener("click", function (ev) {
    const button = ev.target.closest("#catalogue button[data-action=photos]");
    if (button) showPhotos(button.closest("tr").dataset.library);
  });
  document.addEventListener("click", async function (ev) {
    const button = ev.target.closest("#tile-list button[data-action=take-out]");
    if (!button) return;
    button.disabled = true;
    const id = button.dataset.library;
    const query = "?name=" + encodeURIComponent(button.dataset.tile);
    const response = await askDelete("/api/v1/libraries/" + encodeURIComponent(id) + "/tiles" + query);
    const status = document.getElementById("catalogue-status");
    if (response && response.ok) {
      status.hidden = true;
      await refreshCatalogue();
      showPhotos(id);
      return;
    }
    const message = (await refusal(response)).message;
    status.textContent = message.charAt(0).toUpperCase() + message.slice(1);
    status.hidden = false;
    button.disabled = false;
  });
})();
