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
  const button = document.getElementById("go");
  let size = null;
  // Whether the photo's size comes from the server's preview (the browser cannot show it).
  let sizeFromServer = false;
  let objectUrl = null;

  function perPixel() {
    return form.querySelector('input[name="grid"]:checked').value === "per_pixel";
  }

  const maxPixels = Number(form.dataset.maxOutputPixels) || 0;
  const largePixels = Number(form.dataset.largeOutputPixels) || 0;
  const autoCells = Number(form.dataset.autoCells) || 16384;
  const maxCells = Number(cells.max) || 4096;
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

  // Paper sizes as the server reads them (tessera_shared::print): ISO sizes in mm, portrait.
  const PRESETS = { a0: [841, 1189], a1: [594, 841], a2: [420, 594], a3: [297, 420], a4: [210, 297], a5: [148, 210] };
  const UNITS = { mm: 1, cm: 10, in: 25.4 };
  function paperChosen() {
    const radio = form.querySelector('input[name="size"]:checked');
    return Boolean(radio) && radio.value === "paper";
  }
  // The paper field: {w, h} in mm and dpi, or a reason it has none: {message, field}.
  function printSize() {
    const text = printField.value.trim().toLowerCase();
    const usage = "Paper size must be A0 to A5 or width x height with cm, mm or in, then optionally @ and the dpi: A2@300dpi, 60x40cm, 18x24in@150dpi.";
    const m = /^([a-z0-9.]+?)\s*(?:@\s*(\d+)\s*(?:dpi|ppi)?)?$/.exec(text);
    if (!m) return { message: usage, field: printField };
    const dpi = m[2] === undefined ? 300 : Number(m[2]);
    if (dpi < 72 || dpi > 1200) return { message: "The resolution must be 72 to 1200 dpi.", field: printField };
    if (PRESETS[m[1]]) return { w: PRESETS[m[1]][0], h: PRESETS[m[1]][1], dpi: dpi };
    const sides = /^(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)(mm|cm|in)$/.exec(m[1]);
    if (!sides) return { message: usage, field: printField };
    const w = Number(sides[1]) * UNITS[sides[3]], h = Number(sides[2]) * UNITS[sides[3]];
    if (!(w >= 10 && w <= 10000 && h >= 10 && h <= 10000)) return { message: "Each side of the paper must be 1 cm to 10 m.", field: printField };
    return { w: w, h: h, dpi: dpi };
  }
  function cmOf(px, dpi) { return px / dpi * 2.54; }

  function megapixels(pixels) {
    const mp = pixels / 1e6;
    if (mp < 0.1) return mp.toFixed(2);
    if (mp < 100) return mp.toFixed(1);
    return Math.round(mp).toLocaleString("en");
  }

  // A number field's value, or a reason it has none: {value} or {message, field}. An optional
  // field left empty has the value null.
  function number(id, optional) {
    const field = document.getElementById(id);
    const text = field.value.trim();
    const min = Number(field.min);
    const max = field.max === "" ? Infinity : Number(field.max);
    const range = max === Infinity ? min + " or more" : min + " to " + max;
    if (text === "" && optional) return { value: null };
    if (text === "") return { message: "Enter the " + labelOf(id).toLowerCase() + " (" + range + ").", field: field };
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max) {
      return { message: labelOf(id) + " must be a whole number, " + range + ".", field: field };
    }
    return { value: value };
  }

  function gcd(a, b) { return b ? gcd(b, a % b) : a; }

  // The shape of w x h in lowest terms, as "4:3".
  function shapeOf(w, h) {
    const g = gcd(w, h);
    return w / g + ":" + h / g;
  }

  // The chosen library's tile shape ("1:1" when it says none).
  function libraryShape() {
    const select = document.getElementById("library");
    const option = select && select.options[select.selectedIndex];
    return (option && option.dataset.shape) || "1:1";
  }

  // A tile size of `shape` close in area to w x h, as the field takes it: "21", "24x18".
  function sizeOfShape(shape, w, h) {
    const [a, b] = shape.split(":").map(Number);
    const min = Number(form.dataset.tileMin), max = Number(form.dataset.tileMax);
    let k = Math.max(1, Math.round(Math.sqrt((w * h) / (a * b))));
    while (Math.min(a, b) * k < min) k += 1;
    while (k > 1 && Math.max(a, b) * k > max) k -= 1;
    return a === b ? String(a * k) : a * k + "x" + b * k;
  }

  // The tile size field: {w, h} or a reason it has none: {message, field}.
  function tileSize() {
    const text = tile.value.trim();
    const min = Number(form.dataset.tileMin);
    const max = Number(form.dataset.tileMax);
    const range = min + " to " + max;
    if (text === "") return { message: "Enter the tile size (" + range + " pixels, or width x height such as 24x18).", field: tile };
    const m = /^(\d+)(?:x(\d+))?$/.exec(text);
    if (!m) {
      return { message: "Tile size must be one number (16) or width x height (24x18).", field: tile };
    }
    const w = Number(m[1]), h = m[2] === undefined ? w : Number(m[2]);
    if (w < min || w > max || h < min || h > max) {
      return { message: "Each side of a tile must be " + range + " pixels.", field: tile };
    }
    const shape = shapeOf(w, h), wanted = libraryShape();
    if (shape !== wanted) {
      return {
        message: "Tiles of " + text + " are " + shape + ", but this library's tiles are " + wanted +
          ": use " + sizeOfShape(wanted, w, h) + " or a library of shape " + shape + ".",
        field: tile,
      };
    }
    return { w: w, h: h };
  }

  // The adaptive sizes field: {} when empty, {min, max}, or a reason: {message, field}. As the
  // server checks them: each a tile size, the largest the smallest doubled once or more.
  function adaptiveSizes(t) {
    const text = adaptive.value.trim();
    if (text === "") return {};
    const m = /^(\d+)\.\.(\d+)$/.exec(text);
    if (!m) return { message: "Adaptive tile sizes must be smallest..largest, such as 8..32.", field: adaptive };
    const min = Number(m[1]), max = Number(m[2]);
    const lo = Number(form.dataset.tileMin), hi = Number(form.dataset.tileMax);
    if (min < lo || max > hi || max < lo || min > hi) {
      return { message: "Adaptive tile sizes must each be " + lo + " to " + hi + " pixels.", field: adaptive };
    }
    let k = max / min;
    while (Number.isInteger(k) && k > 1 && k % 2 === 0) k /= 2;
    if (max <= min || k !== 1) {
      return { message: "The largest adaptive tile size must be the smallest doubled once or more, as 8..16, 8..32 or 8..64.", field: adaptive };
    }
    if (perPixel()) {
      return { message: "Adaptive tile sizes need cells across, not one tile per pixel.", field: adaptive };
    }
    if (t && t.w !== t.h) {
      return { message: "Adaptive tiles are square: give a square tile size, or no adaptive sizes.", field: adaptive };
    }
    return { min: min, max: max };
  }

  // Marks the fields at fault (none: clears every mark).
  function mark(fields) {
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    (fields || []).forEach(function (el) { if (el) el.setAttribute("aria-invalid", "true"); });
  }

  // The output size and its limit; returns a problem that
  // stops the submission ({message, fields}) or null.
  function update() {
    cells.disabled = perPixel();
    warning.hidden = true;
    if (!size) {
      output.textContent = "choose an image";
      return null;
    }
    const t = tileSize();
    if (t.message) {
      output.textContent = "choose a tile size";
      return { message: t.message, fields: [t.field] };
    }
    let cols, rows;
    printWarning.hidden = true;
    const paper = paperChosen() ? printSize() : null;
    if (paper && paper.message) {
      output.textContent = "choose a paper size";
      return { message: paper.message, fields: [paper.field] };
    }
    if (paper) {
      // As the server fits it: the paper turned to the photo, the most whole tiles that fit.
      let pw = Math.round(paper.w / 25.4 * paper.dpi), ph = Math.round(paper.h / 25.4 * paper.dpi);
      if (size.w !== size.h && (size.w > size.h) !== (pw > ph)) [pw, ph] = [ph, pw];
      const aspect = (size.h / size.w) * (t.w / t.h);
      const rowsOf = function (across) { return Math.max(1, Math.round(across * aspect)); };
      cols = Math.floor(pw / t.w);
      while (cols > 0 && rowsOf(cols) * t.h > ph) cols -= 1;
      if (cols < 1) {
        output.textContent = "choose smaller tiles";
        return { message: "A tile of " + t.w + " px does not fit on that paper: use smaller tiles or a larger paper.", fields: [tile, printField] };
      }
      rows = rowsOf(cols);
      const tileCm = cmOf(Math.min(t.w, t.h), paper.dpi);
      if (tileCm < 0.995) {
        const needed = Math.min(Number(form.dataset.tileMax), Math.ceil(paper.dpi / 2.54));
        printWarning.textContent = "Tiles of " + t.w + (t.w === t.h ? "" : "x" + t.h) + " px print " + tileCm.toFixed(2) +
          " cm wide at " + paper.dpi + " dpi: below about 1 cm the photos in them stop being recognisable. Use tiles of at least " +
          needed + " px, or choose a larger paper.";
        printWarning.hidden = false;
      }
    } else if (perPixel()) {
      cols = size.w;
      rows = size.h;
    } else {
      const c = number("cells", true);
      if (c.message) {
        output.textContent = "choose how many cells across";
        return { message: c.message, fields: [c.field] };
      }
      // As the server sizes it: rows keep the photo's shape with cells of the tiles' shape.
      const aspect = (size.h / size.w) * (t.w / t.h);
      const rowsOf = function (across) { return Math.max(1, Math.round(across * aspect)); };
      cols = c.value === null ? autoAcross(aspect, t, rowsOf) : c.value;
      rows = rowsOf(cols);
    }
    const a = adaptiveSizes(t);
    if (a.message) {
      output.textContent = "choose adaptive tile sizes";
      return { message: a.message, fields: [a.field] };
    }
    let w = cols * t.w;
    let h = rows * t.h;
    let tiles = cols.toLocaleString("en") + " × " + rows.toLocaleString("en") + " tiles";
    // Adaptive squares fill the grid's size rounded up to whole largest squares.
    if (a.max) {
      tiles = "at most " + (cols * rows).toLocaleString("en") + " tiles of " + a.min + " to " + a.max + " px";
      w = Math.ceil(w / a.max) * a.max;
      h = Math.ceil(h / a.max) * a.max;
    }
    const pixels = w * h;
    const printed = paper ? ", printing " + cmOf(w, paper.dpi).toFixed(1) + " × " + cmOf(h, paper.dpi).toFixed(1) +
      " cm with tiles " + cmOf(t.w, paper.dpi).toFixed(2) + " cm wide" : "";
    output.textContent = w.toLocaleString("en") + " × " + h.toLocaleString("en") + " px (" +
      tiles + printed + "), " + megapixels(pixels) + " megapixels" +
      (maxPixels ? "; this server makes mosaics of up to " + megapixels(maxPixels) + " megapixels" : "");
    large.hidden = !(largePixels && pixels > largePixels && !(maxPixels && pixels > maxPixels));
    if (!large.hidden && !allowLarge.checked) {
      return {
        message: "The mosaic would be " + megapixels(pixels) + " megapixels, more than this server makes unasked (" +
          megapixels(largePixels) + "): tick “" + labelOf(allowLarge.name) + "”, or use fewer cells or smaller tiles.",
        fields: [allowLarge],
      };
    }
    if (maxPixels && pixels > maxPixels) {
      const fields = perPixel() ? [tile] : [cells, tile];
      warning.textContent = "That is over this server's limit of " + megapixels(maxPixels) +
        " megapixels: " + (perPixel() ? "use smaller tiles or a smaller image" : "use fewer cells or smaller tiles") + ".";
      warning.hidden = false;
      return { message: warning.textContent, fields: fields };
    }
    return null;
  }

  // Cells across when none are given, as the server chooses them: about autoCells cells shaped
  // like the photo, within the size made unasked.
  function autoAcross(aspect, t, rowsOf) {
    const tilePixels = t.w * t.h;
    const budget = Math.max(1, Math.min(autoCells, largePixels ? Math.floor(largePixels / tilePixels) : autoCells));
    let across = Math.min(maxCells, Math.max(1, Math.floor(Math.sqrt(budget / aspect))));
    while (largePixels && across > 1 && across * rowsOf(across) * tilePixels > largePixels) across -= 1;
    return across;
  }

  // Sizes by name: each sets the tile size (of the library's shape) and the cells across, so
  // that the mosaic's long side is about the size's; its figures follow the photo.
  const sizes = Array.from(form.querySelectorAll('input[name="size"]'));
  function chosenSize() {
    return sizes.find(function (r) { return r.checked; });
  }
  function sizeFor(radio) {
    const side = Number(radio.dataset.tile);
    const t = sizeOfShape(libraryShape(), side, side);
    const m = /^(\d+)(?:x(\d+))?$/.exec(t);
    const tw = Number(m[1]), th = m[2] === undefined ? tw : Number(m[2]);
    const long = Number(radio.dataset.long);
    const aspect = size ? size.w / size.h : 1;
    // Across from the long side: the width for a wide photo, the height's share for a tall one.
    const across = Math.max(1, Math.min(maxCells, Math.round((aspect >= 1 ? long : long * aspect) / tw)));
    const rows = Math.max(1, Math.round(across * (size ? size.h / size.w : 1) * (tw / th)));
    return { tile: t, across: across, w: across * tw, h: rows * th };
  }
  function applySize() {
    sizes.forEach(function (radio) {
      const figures = form.querySelector('[data-figures="' + radio.value + '"]');
      if (!figures || !size || !radio.dataset.tile) return;
      const s = sizeFor(radio);
      figures.textContent = s.w.toLocaleString("en") + " × " + s.h.toLocaleString("en") + " px, " +
        megapixels(s.w * s.h) + " megapixels";
    });
    const radio = chosenSize();
    paperBox.hidden = !radio || radio.value !== "paper";
    printField.disabled = paperBox.hidden;
    if (!radio || radio.value === "custom") return;
    const cellsRadio0 = form.querySelector('input[name="grid"][value="cells"]');
    if (radio.value === "paper") {
      // The grid follows from the paper; tiles of about 1 cm, of the library's shape.
      const p = printSize();
      const side = Math.min(Number(form.dataset.tileMax), Math.ceil((p.dpi || 300) / 2.54));
      tile.value = sizeOfShape(libraryShape(), side, side);
      cells.value = "";
      if (cellsRadio0) cellsRadio0.checked = true;
      return;
    }
    const s = sizeFor(radio);
    tile.value = s.tile;
    cells.value = size ? String(s.across) : "";
    const cellsRadio = form.querySelector('input[name="grid"][value="cells"]');
    if (cellsRadio) cellsRadio.checked = true;
  }
  sizes.forEach(function (radio) {
    radio.addEventListener("change", function () { applySize(); refresh(); });
  });
  printField.addEventListener("input", function () { applySize(); refresh(); });
  document.getElementById("quality").disabled = document.getElementById("format").value !== "jpeg";
  document.getElementById("format").addEventListener("change", function () {
    document.getElementById("quality").disabled = this.value !== "jpeg";
  });
  // Typing a tile size or cells of one's own is the custom size.
  // On paper, a tile size of one's own keeps the paper (its cells follow from it).
  [tile, cells].forEach(function (field) {
    field.addEventListener("input", function () {
      if (field === tile && paperChosen()) return;
      const custom = sizes.find(function (r) { return r.value === "custom"; });
      if (custom) custom.checked = true;
      paperBox.hidden = true;
      printField.disabled = true;
    });
  });

  // Refreshes the figures, and the submit button and field marks with them.
  function refresh() {
    const problem = update();
    button.disabled = Boolean(problem && problem.fields && !warning.hidden);
    if (!problem) mark([]);
    else if (!warning.hidden) mark(problem.fields);
  }

  function showFile(file) {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    size = null;
    sizeFromServer = false;
    natural.textContent = "";
    if (!file) {
      preview.hidden = true;
      refresh();
      return;
    }
    objectUrl = URL.createObjectURL(file);
    preview.onload = function () {
      size = { w: preview.naturalWidth, h: preview.naturalHeight };
      natural.textContent = file.name + ": " + size.w + " × " + size.h + " px";
      applySize();
      refresh();
    };
    preview.onerror = function () {
      // HEIC and TIFF, in most browsers: the server reads it, and its preview gives the size.
      preview.hidden = true;
      natural.textContent = file.name + ": this browser cannot show it; the server reads it";
      sizeFromServer = true;
      refresh();
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
  // A library of another shape: the tile size follows it, at about the same size.
  // A library without transparency looks the same over any background: the choice is off.
  const background = document.getElementById("background");
  function followLibrary() {
    const t = /^(\d+)(?:x(\d+))?$/.exec(tile.value.trim());
    const w = t ? Number(t[1]) : 16, h = t && t[2] !== undefined ? Number(t[2]) : w;
    if (shapeOf(w, h) !== libraryShape()) tile.value = sizeOfShape(libraryShape(), w, h);
    const option = library.options[library.selectedIndex];
    background.disabled = !option || option.dataset.transparent !== "true";
  }
  followLibrary();
  library.addEventListener("change", function () { followLibrary(); applySize(); refresh(); });
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
  form.addEventListener("input", refresh);
  form.addEventListener("change", refresh);

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

  // The submission's fields as the form holds them (also what a preview is asked with).
  function jobData() {
    const data = new FormData();
    data.append("image", input.files[0], input.files[0].name);
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
    if (!background.disabled && background.value !== "library") {
      data.append("background", background.value);
    }
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
    const t = tileSize();
    if (t.message) {
      fail(t.message, [t.field]);
      return;
    }
    const numbers = declaredInputs().filter(function (el) { return el.type === "number"; })
      .map(function (el) { return el.id; })
      .concat(perPixel() || paperChosen() ? [] : ["cells"])
      .concat(document.getElementById("format").value === "jpeg" ? ["quality"] : []);
    for (const id of numbers) {
      // A field whose placeholder says what empty means ("auto", "no limit") may be empty.
      const n = number(id, document.getElementById(id).placeholder !== "");
      if (n.message) {
        fail(n.message, [n.field]);
        return;
      }
    }
    const problem = update();
    if (problem) {
      fail(problem.message, problem.fields);
      return;
    }
    mark([]);
    const data = jobData();
    button.disabled = true;
    let response;
    try {
      response = await fetch("/api/v1/jobs", {
        method: "POST",
        body: data,
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
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
    if (!input.files.length || (size ? update() : !sizeFromServer)) return;
    if (sketchBusy) {
      sketchAgain = true;
      return;
    }
    sketchBusy = true;
    const started = performance.now();
    try {
      const response = await fetch("/api/v1/previews", {
        method: "POST",
        body: jobData(),
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
      if (response.ok) {
        const blob = await response.blob();
        if (sketchUrl) URL.revokeObjectURL(sketchUrl);
        sketchUrl = URL.createObjectURL(blob);
        sketchImg.src = sketchUrl;
        const photo = (response.headers.get("X-Photo-Size") || "").split("x").map(Number);
        if (!size && sizeFromServer && photo.length === 2 && photo[0] > 0 && photo[1] > 0) {
          // The photo's size, learnt from the server: the sizes' figures follow, and a preview
          // at the chosen size.
          size = { w: photo[0], h: photo[1] };
          natural.textContent = input.files[0].name + ": " + size.w + " × " + size.h + " px";
          applySize();
          refresh();
          sketchAgain = true;
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
        sketchCaption.textContent = message;
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
  form.addEventListener("change", scheduleSketch);
  form.addEventListener("input", scheduleSketch);
  preview.addEventListener("load", scheduleSketch);
  refresh();
})();
