"use strict";
// The upload form: preview, live output size, submission to the JSON API.
(function () {
  const form = document.getElementById("submit-form");
  const input = document.getElementById("image");
  const drop = document.getElementById("drop");
  const preview = document.getElementById("preview");
  const natural = document.getElementById("natural");
  const output = document.getElementById("output-size");
  const error = document.getElementById("error");
  const cells = document.getElementById("cells");
  const tile = document.getElementById("tile_size");
  const adaptive = document.getElementById("adaptive");
  const gridCells = form.querySelector('input[name="grid"][value="cells"]');
  const button = document.getElementById("go");
  let size = null;
  // Whether the photo's size comes from the server's preview (the browser cannot show it).
  let sizeFromServer = false;
  let objectUrl = null;

  function perPixel() {
    return form.querySelector('input[name="grid"]:checked').value === "per_pixel";
  }

  const maxPixels = Number(form.dataset.maxOutputPixels) || 0;
  const large = document.getElementById("large-confirm");
  const allowLarge = large.querySelector("input");
  const warning = document.getElementById("output-warning");
  const printField = document.getElementById("print");
  const paperBox = document.getElementById("paper");
  const printWarning = document.getElementById("print-warning");
  // The job's options as the server declares them (GET /api/v1/options): their labels, for
  // messages. The inputs carry their bounds and defaults, rendered from the same declaration.
  const LABELS = { image: "Target image" };
  fetch("/api/v1/options", { credentials: "same-origin" })
    .then(function (res) { return res.ok ? res.json() : []; })
    .then(function (options) {
      options.forEach(function (o) { LABELS[o.name] = o.label.replace(/ \(.*\)$/, ""); });
    })
    .catch(function () { /* the inputs' own labels serve */ });
  // An option's label: the declared one, else its input's.
  function labelOf(name) {
    if (LABELS[name]) return LABELS[name];
    const label = form.querySelector('label[for="' + name + '"]');
    return label ? label.textContent.trim().replace(/ \(.*\)$/, "") : name;
  }

  function paperChosen() {
    const radio = form.querySelector('input[name="size"]:checked');
    return Boolean(radio) && radio.value === "paper";
  }

  function megapixels(pixels) {
    const mp = pixels / 1e6;
    if (mp < 0.1) return mp.toFixed(2);
    if (mp < 100) return mp.toFixed(1);
    return Math.round(mp).toLocaleString("en");
  }

  // Puts a message right under the field at fault where that field shows (under a box to type
  // in, or under the whole of a choice); otherwise back under the output size, where it began.
  const warningHome = document.getElementById("output-warning").previousElementSibling;
  function besideField(message, fields) {
    const field = fields && fields[0];
    if (!field || !field.getClientRects().length) {
      warningHome.after(message);
    } else if (field.matches("input[type=text], input[type=number], select")) {
      field.after(message);
    } else {
      field.closest(".field, .drop, fieldset, label").after(message);
    }
  }

  // Marks the fields at fault (none: clears every mark).
  function mark(fields) {
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    (fields || []).forEach(function (el) { if (el) el.setAttribute("aria-invalid", "true"); });
  }

  // Sizes by name: the server gives each one's tile size and cells for the photo and library
  // (POST /api/v1/sizing), and the form shows and uses them. On paper, a tile size typed by
  // hand is kept (the grid still follows the paper).
  const sizes = Array.from(form.querySelectorAll('input[name="size"]'));
  let ownTile = false;
  function chosenSize() {
    return sizes.find(function (r) { return r.checked; });
  }
  // The size by name the server is to lay the grid out for, or null for the fields as typed.
  function namedSize() {
    const radio = chosenSize();
    if (!radio || radio.value === "custom" || (radio.value === "paper" && ownTile)) return null;
    return radio.value;
  }
  function showChosenSize() {
    const radio = chosenSize();
    paperBox.hidden = !radio || radio.value !== "paper";
    printField.disabled = paperBox.hidden;
  }
  sizes.forEach(function (radio) {
    radio.addEventListener("change", function () { ownTile = false; showChosenSize(); });
  });
  showChosenSize();
  document.getElementById("quality").disabled = document.getElementById("format").value !== "jpeg";
  document.getElementById("format").addEventListener("change", function () {
    document.getElementById("quality").disabled = this.value !== "jpeg";
  });
  // Typing a tile size or cells of one's own is the custom size.
  // On paper, a tile size of one's own keeps the paper (its cells follow from it).
  // An answer asked before the last edit of these fields leaves them as they are.
  let gridEdits = 0;
  [tile, cells].forEach(function (field) {
    ["input", "change"].forEach(function (e) {
      field.addEventListener(e, function () {
        gridEdits += 1;
        if (field === tile && paperChosen()) {
          ownTile = true;
          return;
        }
        const custom = sizes.find(function (r) { return r.value === "custom"; });
        if (custom) custom.checked = true;
        showChosenSize();
      });
    });
  });

  // A POST to the API from this page (the header marks it as the site's own, with its cookie).
  function post(url, body) {
    return fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-Requested-With": "tessera" },
    });
  }

  // The server's figures for the form as it is: {body} (the mosaic it would make), {problem}
  // (the refusal a submission would get, with its field), or null (no photo, or no answer).
  let sizing = null;
  let sizingRun = null;
  let sizingAgain = false;
  let sizingTimer = null;

  // The sizing request: the photo's size, the size by name, and the job's fields (less the
  // grid's, which a size by name sets).
  function sizingData() {
    const data = new URLSearchParams();
    data.append("width", String(size.w));
    data.append("height", String(size.h));
    const named = namedSize();
    const laidOut = named === "paper" ? ["tile_size", "cells", "per_pixel"]
      : named ? ["tile_size", "cells", "per_pixel", "print"] : [];
    formFields().forEach(function (value, name) {
      if (laidOut.indexOf(name) < 0) data.append(name, value);
    });
    if (named) data.append("size", named);
    return data;
  }

  async function fetchSizing() {
    const asked = { named: namedSize(), edits: gridEdits };
    try {
      const response = await post("/api/v1/sizing", sizingData());
      let body = null;
      try { body = await response.json(); } catch (e) { body = null; }
      if (response.ok && body) return { body: body, asked: asked };
      return { problem: explain(response.status, body), code: body && body.error ? body.error.code : null };
    } catch (e) {
      return null;
    }
  }

  // Asks the server for the form's figures, one request at a time (a change during one asks
  // again after); resolves once the answer for the form as it is now is shown.
  function askSizing() {
    clearTimeout(sizingTimer);
    if (sizingRun) {
      sizingAgain = true;
      return sizingRun;
    }
    sizingRun = (async function () {
      await null; // sizingRun is set before the loop ends, even with nothing to ask
      do {
        sizingAgain = false;
        sizing = size ? await fetchSizing() : null;
      } while (sizingAgain);
      sizingRun = null;
      showSizing();
    })();
    return sizingRun;
  }
  function scheduleSizing() {
    clearTimeout(sizingTimer);
    sizingTimer = setTimeout(askSizing, 150);
  }

  function pixelsInWords(w, h) {
    return w.toLocaleString("en") + " × " + h.toLocaleString("en") + " px";
  }

  // Shows the server's figures: the output size, each size by name, the print's warning, the
  // tick for a large mosaic, or the refusal on its field.
  function showSizing() {
    warning.hidden = true;
    printWarning.hidden = true;
    if (!size) {
      output.textContent = "choose an image";
      large.hidden = true;
      return;
    }
    if (!sizing) {
      output.textContent = "the server could not be asked";
      return;
    }
    if (sizing.problem) {
      output.textContent = "not yet: see the message";
      warning.textContent = sizing.problem.message;
      besideField(warning, sizing.problem.fields);
      warning.hidden = false;
      mark(sizing.problem.fields);
      if (sizing.code === "large_output") large.hidden = false;
      return;
    }
    const b = sizing.body;
    const named = namedSize();
    if (named && named === sizing.asked.named && gridEdits === sizing.asked.edits) {
      tile.value = b.tile_size;
      cells.value = named === "paper" ? "" : String(b.cols);
      if (named !== "paper") gridCells.checked = true;
    }
    cells.disabled = perPixel();
    (b.sizes || []).forEach(function (s) {
      const figures = form.querySelector('[data-figures="' + s.name + '"]');
      if (figures) figures.textContent = pixelsInWords(s.width, s.height) + ", " + megapixels(s.width * s.height) + " megapixels";
    });
    const a = adaptive.value.trim();
    const tiles = a ? "at most " + b.tiles.toLocaleString("en") + " tiles of " + a.replace("..", " to ") + " px"
      : b.cols.toLocaleString("en") + " × " + b.rows.toLocaleString("en") + " tiles";
    const printed = b.print ? ", printing " + b.print.width_cm.toFixed(1) + " × " + b.print.height_cm.toFixed(1) +
      " cm with tiles " + b.print.tile_cm.toFixed(2) + " cm wide" : "";
    output.textContent = pixelsInWords(b.width, b.height) + " (" + tiles + printed + "), " +
      megapixels(b.width * b.height) + " megapixels" +
      (maxPixels ? "; this server makes mosaics of up to " + megapixels(maxPixels) + " megapixels" : "");
    if (b.warnings.length) {
      printWarning.textContent = b.warnings.map(function (w) { return capitalised(w) + "."; }).join(" ");
      printWarning.hidden = false;
    }
    large.hidden = !b.large;
    mark([]);
    scheduleSketch();
  }

  function showFile(file) {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    size = null;
    sizeFromServer = false;
    natural.textContent = "";
    if (!file) {
      preview.hidden = true;
      askSizing();
      return;
    }
    objectUrl = URL.createObjectURL(file);
    preview.onload = function () {
      size = { w: preview.naturalWidth, h: preview.naturalHeight };
      natural.textContent = file.name + ": " + size.w + " × " + size.h + " px";
      askSizing();
    };
    preview.onerror = function () {
      // HEIC and TIFF, in most browsers: the server reads it, and its preview gives the size.
      preview.hidden = true;
      natural.textContent = file.name + ": this browser cannot show it; the server reads it";
      sizeFromServer = true;
      askSizing();
      scheduleSketch();
    };
    preview.src = objectUrl;
    preview.hidden = false;
  }

  input.addEventListener("change", function () { showFile(input.files[0]); });
  ["dragenter", "dragover"].forEach(function (e) {
    drop.addEventListener(e, function (ev) { ev.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (e) {
    drop.addEventListener(e, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (ev) {
    ev.preventDefault();
    if (ev.dataTransfer && ev.dataTransfer.files.length) {
      input.files = ev.dataTransfer.files;
      showFile(input.files[0]);
    }
  });
  // The strip of sample tiles follows the chosen library.
  const library = document.getElementById("library");
  const strip = document.getElementById("sample-strip");
  // A library without transparency looks the same over any background: the choice is off.
  const background = document.getElementById("background");
  function followLibrary() {
    const option = library.options[library.selectedIndex];
    background.disabled = !option || option.dataset.transparent !== "true";
  }
  followLibrary();
  library.addEventListener("change", followLibrary);
  if (strip) {
    library.addEventListener("change", function () {
      const option = library.options[library.selectedIndex];
      if (!option) return;
      strip.removeAttribute("width");
      strip.removeAttribute("height");
      strip.src = "/api/v1/libraries/" + encodeURIComponent(option.value) + "/sheet";
      strip.alt = "Sample tiles of " + option.textContent.replace(/ \(\d+ tiles(, \d+:\d+)?\)$/, "");
    });
  }
  form.addEventListener("input", scheduleSizing);
  form.addEventListener("change", scheduleSizing);

  function megabytes(n) {
    return (n / 1048576).toFixed(1) + " MB";
  }

  // The message goes next to the field at fault (opening "More options" when it is there),
  // and the field takes focus, which brings both into view; with no field, above the button.
  function fail(message, fields) {
    error.textContent = message;
    error.hidden = false;
    button.disabled = false;
    mark(fields);
    const field = fields && fields[0];
    const home = field && field.closest(".field, .drop, fieldset, label");
    if (home) {
      const more = home.closest("details");
      if (more) more.open = true;
      home.after(error);
      field.focus();
      error.scrollIntoView({ block: "nearest" });
    } else {
      button.before(error);
      error.scrollIntoView({ block: "nearest" });
    }
  }

  function capitalised(text) {
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  // The server's answer in words, and the field it is about: the message is the server's, for
  // any code, with the field it names (the body's `field`) in the form's words and marked.
  function explain(status, body) {
    const error = body && body.error ? body.error : { message: "the server answered " + status };
    const name = error.field;
    const el = !name ? null : name === "image" ? input : document.getElementById(name);
    let message = error.message;
    if (name && message.startsWith(name + " ")) {
      message = labelOf(name) + message.slice(name.length);
    }
    return { message: capitalised(message) + ".", fields: el ? [el] : [] };
  }

  // The fields laid out by hand, which jobData sends by its own rules.
  const BY_HAND = ["grid", "cells", "format", "quality", "background"];
  // The inputs made from the job specification's declaration, under More options.
  function declaredInputs() {
    return Array.from(document.querySelectorAll("#more-options [name]")).filter(function (el) {
      return BY_HAND.indexOf(el.name) < 0;
    });
  }

  // The submission's fields as the form holds them, less the photo.
  function formFields() {
    const data = new FormData();
    data.append("library", document.getElementById("library").value);
    if (paperChosen()) data.append("print", printField.value.trim());
    else if (perPixel()) data.append("per_pixel", "true");
    else if (cells.value.trim() !== "") data.append("cells", cells.value.trim());
    if (!large.hidden && allowLarge.checked) data.append(allowLarge.name, "true");
    declaredInputs().forEach(function (el) {
      if (el.type === "checkbox") {
        if (el.checked) data.append(el.name, "true");
      } else if (el.value.trim() !== "") {
        data.append(el.name, el.value.trim());
      }
    });
    const format = document.getElementById("format").value;
    if (format !== "png") data.append("format", format);
    if (format === "jpeg") data.append("quality", document.getElementById("quality").value.trim());
    // The declared default (the option rendered selected) is the server's when none is sent.
    const chosen = background.options[background.selectedIndex];
    if (!background.disabled && chosen && !chosen.defaultSelected) {
      data.append("background", background.value);
    }
    return data;
  }

  // The submission: the photo and the form's fields (also what a preview is asked with).
  function jobData() {
    const data = formFields();
    data.append("image", input.files[0], input.files[0].name);
    return data;
  }

  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    error.hidden = true;
    if (!input.files.length) {
      fail("Choose an image first.", [input]);
      return;
    }
    const limit = Number(form.dataset.maxUpload);
    if (limit > 0 && input.files[0].size > limit) {
      fail("The image is " + megabytes(input.files[0].size) + ", over the upload limit of " +
        megabytes(limit) + ".", [input]);
      return;
    }
    // The figures for the form as it is: a refusal shows on its field before the photo is sent.
    await askSizing();
    if (sizing && sizing.problem) {
      warning.hidden = true;
      fail(sizing.problem.message, sizing.problem.fields);
      return;
    }
    mark([]);
    const data = jobData();
    button.disabled = true;
    let response;
    try {
      response = await post("/api/v1/jobs", data);
    } catch (e) {
      fail("The server could not be reached: check the connection and try again.");
      return;
    }
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (response.ok && body && body.id) {
      window.location.assign("/jobs/" + encodeURIComponent(body.id));
      return;
    }
    const explained = explain(response.status, body);
    fail(explained.message, explained.fields);
  });

  // A preview of the mosaic, made by the server at a few pixels a tile: after a photo is
  // chosen, and again after each change, one at a time (a change during one asks again after).
  const sketch = document.getElementById("sketch");
  const sketchImg = document.getElementById("sketch-img");
  const sketchCaption = document.getElementById("sketch-caption");
  let sketchBusy = false;
  let sketchAgain = false;
  let sketchTimer = null;
  let sketchUrl = null;
  async function makeSketch() {
    if (!input.files.length || (size ? !(sizing && sizing.body) : !sizeFromServer)) return;
    if (sketchBusy) {
      sketchAgain = true;
      return;
    }
    sketchBusy = true;
    const started = performance.now();
    try {
      const response = await post("/api/v1/previews", jobData());
      if (response.ok) {
        const blob = await response.blob();
        if (sketchUrl) URL.revokeObjectURL(sketchUrl);
        sketchUrl = URL.createObjectURL(blob);
        sketchImg.src = sketchUrl;
        sketchImg.hidden = false;
        const photo = (response.headers.get("X-Photo-Size") || "").split("x").map(Number);
        if (!size && sizeFromServer && photo.length === 2 && photo[0] > 0 && photo[1] > 0) {
          // The photo's size, learnt from the server: the sizes' figures follow, and a preview
          // at the chosen size.
          size = { w: photo[0], h: photo[1] };
          natural.textContent = input.files[0].name + ": " + size.w + " × " + size.h + " px";
          askSizing();
        }
        const cellsShown = (response.headers.get("X-Preview-Cells") || "").replace("x", " × ");
        sketchCaption.textContent = "Preview" + (cellsShown ? ", " + cellsShown + " tiles" : "") +
          ": Make the mosaic for the full size.";
        sketch.dataset.ms = String(Math.round(performance.now() - started));
        sketch.hidden = false;
        preview.hidden = true;
      } else {
        let message = "No preview: the server answered " + response.status + ".";
        try { message = "No preview: " + (await response.json()).error.message + "."; } catch (e) { /* keep it */ }
        // In words only: no picture, rather than a broken one.
        sketchCaption.textContent = message;
        sketchImg.hidden = true;
        sketch.hidden = false;
      }
    } catch (e) {
      // No preview this time; the form works without it.
    } finally {
      sketchBusy = false;
      if (sketchAgain) {
        sketchAgain = false;
        scheduleSketch();
      }
    }
  }
  function scheduleSketch() {
    clearTimeout(sketchTimer);
    sketchTimer = setTimeout(makeSketch, 200);
  }
  // Before the photo's size is known (the server reads it), the preview follows the form.
  ["change", "input"].forEach(function (e) {
    form.addEventListener(e, function () { if (!size && sizeFromServer) scheduleSketch(); });
  });
  showSizing();
})();
