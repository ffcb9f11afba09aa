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
  const button = document.getElementById("go");
  let size = null;
  let objectUrl = null;

  function perPixel() {
    return form.querySelector('input[name="grid"]:checked').value === "per_pixel";
  }

  function update() {
    cells.disabled = perPixel();
    if (!size) {
      output.textContent = "choose an image";
      return;
    }
    const t = parseInt(tile.value, 10);
    if (!(t > 0)) {
      output.textContent = "choose a tile size";
      return;
    }
    let cols, rows;
    if (perPixel()) {
      cols = size.w;
      rows = size.h;
    } else {
      cols = parseInt(cells.value, 10);
      if (!(cols > 0)) {
        output.textContent = "choose how many cells across";
        return;
      }
      rows = Math.max(1, Math.round((cols * size.h) / size.w));
    }
    const w = cols * t;
    const h = rows * t;
    output.textContent = w + " × " + h + " px (" + cols + " × " + rows + " tiles, " +
      ((w * h) / 1e6).toFixed(1) + " megapixels)";
  }

  function showFile(file) {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    size = null;
    natural.textContent = "";
    if (!file) {
      preview.hidden = true;
      update();
      return;
    }
    objectUrl = URL.createObjectURL(file);
    preview.onload = function () {
      size = { w: preview.naturalWidth, h: preview.naturalHeight };
      natural.textContent = file.name + ": " + size.w + " × " + size.h + " px";
      update();
    };
    preview.onerror = function () {
      preview.hidden = true;
      natural.textContent = file.name + ": the browser cannot show this image";
      update();
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
  if (strip) {
    library.addEventListener("change", function () {
      const option = library.options[library.selectedIndex];
      if (!option) return;
      strip.removeAttribute("width");
      strip.removeAttribute("height");
      strip.src = "/api/v1/libraries/" + encodeURIComponent(option.value) + "/sheet";
      strip.alt = "Sample tiles of " + option.textContent.replace(/ \(\d+ tiles\)$/, "");
    });
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);

  function megabytes(n) {
    return (n / 1048576).toFixed(1) + " MB";
  }

  function fail(message) {
    error.textContent = message;
    error.hidden = false;
    button.disabled = false;
  }

  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    error.hidden = true;
    if (!input.files.length) {
      fail("Choose an image first.");
      input.focus();
      return;
    }
    const limit = Number(form.dataset.maxUpload);
    if (limit > 0 && input.files[0].size > limit) {
      fail("The image is " + megabytes(input.files[0].size) + ", over the upload limit of " +
        megabytes(limit) + ".");
      return;
    }
    const data = new FormData();
    data.append("image", input.files[0], input.files[0].name);
    data.append("library", document.getElementById("library").value);
    // An empty box is left out: the server then uses its default.
    const add = function (name, value) {
      if (value !== "") data.append(name, value);
    };
    add("tile_size", tile.value);
    if (perPixel()) data.append("per_pixel", "true");
    else add("cells", cells.value);
    ["slices", "repeat_radius", "blend"].forEach(function (name) {
      add(name, document.getElementById(name).value);
    });
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
      fail("The server could not be reached.");
      return;
    }
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (response.ok && body && body.id) {
      window.location.assign("/jobs/" + encodeURIComponent(body.id));
      return;
    }
    const message = body && body.error && body.error.message ? body.error.message
      : body && body.message ? body.message : "The server answered " + response.status + ".";
    fail(message);
  });
  update();
})();
