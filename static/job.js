"use strict";
// The job page: live progress over Server-Sent Events, then the mosaic in a zoomable viewer.
(function () {
  const section = document.getElementById("job");
  const id = section.dataset.job;
  const base = "/api/v1/jobs/" + encodeURIComponent(id);
  const stateEl = document.getElementById("state");
  const doneEl = document.getElementById("done");
  const totalEl = document.getElementById("total");
  const elapsedEl = document.getElementById("elapsed");
  const bands = document.getElementById("bands");
  const failure = document.getElementById("failure");
  const result = document.getElementById("result");
  const img = document.getElementById("mosaic");
  const transactions = document.getElementById("transactions");
  let created = null;
  let finished = null;
  let shown = false;
  // The mosaic's full size, once done: tiles are loaded when zoomed past the preview.
  let full = null;
  // The zoom pyramid as the server describes it in its Deep Zoom descriptor (`/dzi`): the
  // tile size and the deepest level (the full resolution). Null until it is read.
  let pyramid = null;
  // The mosaic's size and cell grid, once it is done.
  let grid = null;
  let source = null;

  // As the server writes sizes: 950 kB, 1.4 MB, 238 MB, 1.4 GB.
  function sizeInWords(n) {
    if (n < 1e3) return n + " bytes";
    if (n < 1e6) return (n / 1e3).toFixed(0) + " kB";
    if (n < 1e7) return (n / 1e6).toFixed(1) + " MB";
    if (n < 1e9) return (n / 1e6).toFixed(0) + " MB";
    return (n / 1e9).toFixed(1) + " GB";
  }

  function seconds(ms) {
    return (ms / 1000).toFixed(1) + " s";
  }

  function tick() {
    if (!created) return;
    const end = finished || Date.now();
    elapsedEl.textContent = seconds(Math.max(0, end - created));
  }
  setInterval(tick, 250);

  function drawBands(total, done) {
    if (bands.childElementCount !== total) {
      bands.replaceChildren();
      for (let i = 0; i < total; i++) {
        const b = document.createElement("div");
        b.className = "band";
        bands.appendChild(b);
      }
    }
    for (let i = 0; i < total; i++) {
      bands.children[i].classList.toggle("filled", done.has(i));
    }
    bands.setAttribute("aria-label", done.size + " of " + total + " parts made");
  }

  // On a phone the details below the mosaic start folded.
  if (window.matchMedia("(max-width: 40rem)").matches) {
    document.querySelectorAll("details.fold").forEach(function (d) { d.open = false; });
  }

  // The owner's buttons: Cancel while the job runs, Delete once it has ended.
  const owned = section.dataset.owned === "true";
  const cancelButton = document.getElementById("cancel");
  const deleteButton = document.getElementById("delete");
  const statusLine = document.getElementById("job-status");
  async function act(button, method, url, then) {
    button.disabled = true;
    let response;
    try {
      response = await fetch(url, { method: method, credentials: "same-origin", headers: { "X-Requested-With": "tessera" } });
    } catch (e) {
      response = null;
    }
    if (response && (response.ok || response.status === 404)) {
      then();
      return;
    }
    let message = response ? "The server answered " + response.status + "." : "The server could not be reached; nothing was changed.";
    try {
      message = (await response.json()).error.message;
    } catch (e) {
      // Keep the message above.
    }
    const line = button === cancelButton ? failure : statusLine;
    line.textContent = message;
    line.hidden = false;
    button.disabled = false;
  }
  if (cancelButton) {
    cancelButton.addEventListener("click", function () {
      act(cancelButton, "POST", base + "/cancel", function () { cancelButton.hidden = true; });
    });
  }
  if (deleteButton) {
    deleteButton.addEventListener("click", function () {
      if (!window.confirm("Delete this mosaic? This cannot be undone.")) return;
      act(deleteButton, "DELETE", base, function () { window.location.assign("/jobs"); });
    });
  }

  function showFull() {
    if (!img.dataset.full) {
      img.dataset.full = "1";
      img.src = base + "/result";
    }
  }
  img.addEventListener("error", showFull);

  function showResult(job) {
    if (shown) return;
    shown = true;
    section.hidden = true;
    if (job.output) {
      full = { w: job.output.width, h: job.output.height };
      grid = { w: job.output.width, h: job.output.height, cols: job.output.cols, rows: job.output.rows };
    }
    readPyramid();
    result.hidden = false;
    openDeepLink();
    // The downscaled preview (the page of a done job names it already, so it loads at once);
    // the full mosaic when there is none (a very large one).
    const wanted = base + "/preview";
    if (img.getAttribute("src") !== wanted) img.src = wanted;
    else if (img.complete && img.naturalWidth === 0) showFull();
    // The download's size, when the page was loaded before the mosaic was done.
    const download = document.getElementById("download");
    if (!/\)$/.test(download.textContent)) {
      fetch(base + "/result", { method: "HEAD", credentials: "same-origin" }).then(function (r) {
        const n = Number(r.headers.get("Content-Length"));
        if (r.ok && n > 0) download.textContent = "Download (" + sizeInWords(n) + ")";
      }).catch(function () {});
    }
    transactions.replaceChildren();
    const entries = Object.entries(job.transactions || {});
    let total = 0;
    entries.forEach(function (kv) {
      total += kv[1];
      const tr = document.createElement("tr");
      const a = document.createElement("td");
      const b = document.createElement("td");
      a.textContent = kv[0];
      b.textContent = String(kv[1]);
      tr.append(a, b);
      transactions.appendChild(tr);
    });
    const tr = document.createElement("tr");
    const a = document.createElement("th");
    const b = document.createElement("td");
    a.scope = "row";
    a.textContent = "Total";
    b.textContent = String(total);
    tr.append(a, b);
    transactions.appendChild(tr);
  }

  // The quality figures, once the job is planned: the card as the server formats it.
  let qualityShown = !document.getElementById("quality").hidden;
  function showQuality(q) {
    if (!q || qualityShown) return;
    qualityShown = true;
    fetch("/jobs/" + encodeURIComponent(id) + "/quality", { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { document.getElementById("quality").outerHTML = html; })
      .catch(function () { qualityShown = false; });
  }

  // The quality figures are worked out in the background and may land just after the job is
  // done: read the job again until they are there.
  let awaitingQuality = false;
  function awaitQuality(tries) {
    if (tries <= 0) return;
    setTimeout(function () {
      fetch(base, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (job) {
          if (job.quality) showQuality(job.quality);
          else awaitQuality(tries - 1);
        })
        .catch(function () { awaitQuality(tries - 1); });
    }, 500);
  }

  function render(job) {
    showQuality(job.quality);
    if (job.state === "done" && !job.quality && !awaitingQuality) {
      awaitingQuality = true;
      awaitQuality(120);
    }
    created = Date.parse(job.created_at);
    finished = job.finished_at ? Date.parse(job.finished_at) : null;
    tick();
    stateEl.textContent = job.state;
    const total = job.progress.slices_total || job.params.slices || 0;
    doneEl.textContent = String(job.progress.slices_done);
    totalEl.textContent = total ? String(total) : "?";
    const done = new Set((job.slices || []).map(function (s) { return s.seq; }));
    if (job.state === "done") {
      for (let i = 0; i < total; i++) done.add(i);
    }
    drawBands(total, done);
    if (job.state === "failed") {
      failure.textContent = "The job failed: " + (job.error || "no reason given");
      failure.hidden = false;
    }
    if (cancelButton) cancelButton.hidden = !owned || job.state === "done" || job.state === "failed";
    if (job.state === "done") showResult(job);
    if (job.expires_at) {
      const expires = document.getElementById("expires");
      expires.dateTime = job.expires_at;
      expires.textContent = new Date(job.expires_at).toLocaleString();
      document.getElementById("expiry").hidden = false;
    }
    if ((job.state === "done" || job.state === "failed") && source) {
      source.close();
      source = null;
    }
  }

  function listen() {
    source = new EventSource(base + "/events");
    source.addEventListener("job", function (ev) {
      render(JSON.parse(ev.data));
    });
    source.addEventListener("error", function () {
      // The stream ended or broke: read the job once; reconnect while it is still running.
      if (source) source.close();
      source = null;
      fetch(base, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (job) {
          render(job);
          if (job.state !== "done" && job.state !== "failed") setTimeout(listen, 1000);
        })
        .catch(function () { setTimeout(listen, 2000); });
    });
  }
  listen();

  // The viewer. `scale` is screen pixels per preview pixel. Zoomed in past the preview's own
  // resolution, tiles of the pyramid (level 0 here: full resolution, level l: shrunk by 2^l;
  // Deep Zoom counts the other way) cover the visible area. Tiles are fetched with a signal, so those no view needs any more
  // are cancelled; loaded tiles of other levels stay underneath until the wanted level has
  // arrived; once it has, the next finer level around the view is fetched ahead (into the
  // HTTP cache: tiles are immutable). `data-sharp` says when the wanted level is all shown.
  const viewer = document.getElementById("viewer");
  // Tile requests wait until the view has been still this long: a fast zoom asks only for
  // the level it ends on.
  const SETTLE_MS = 60;
  const PREFETCH_MAX = 24;
  const layer = document.createElement("div");
  layer.style.position = "absolute";
  layer.style.inset = "0";
  layer.style.pointerEvents = "none";
  viewer.appendChild(layer);
  // key "level/x/y" -> {img, level, tx, ty, loaded, abort}
  const tiles = new Map();
  const prefetched = new Map();
  let scale = 1;
  let fitScale = 1;
  let x = 0;
  let y = 0;
  let frame = false;
  let settle = null;

  function readPyramid() {
    fetch(base + "/dzi", { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.text(); })
      .then(function (text) {
        const image = new DOMParser().parseFromString(text, "application/xml").documentElement;
        const size = image.getElementsByTagName("Size")[0];
        const tile = Number(image.getAttribute("TileSize"));
        const side = size ? Math.max(Number(size.getAttribute("Width")), Number(size.getAttribute("Height"))) : 0;
        if (!(tile > 0 && side > 0)) return;
        pyramid = { tile: tile, deepest: Math.ceil(Math.log2(side)) };
        schedule();
      })
      .catch(function () {});
  }
  // The coarsest level worth tiling: the one whose picture still spans more than one tile.
  function topLevel() {
    let level = 0;
    while (level < 31 && (Math.max(full.w, full.h) - 1) / Math.pow(2, level) >= pyramid.tile) level++;
    return level;
  }
  // Screen pixels per full-resolution pixel.
  function fullScale() {
    return img.naturalWidth && full ? scale * img.naturalWidth / full.w : 0;
  }
  // The level the view wants (null: the preview is enough), and the tiles of `level` that
  // cover the view grown by `margin` tiles.
  function wantedLevel() {
    const s = fullScale();
    const previewLevel = full && img.naturalWidth ? Math.log2(full.w / img.naturalWidth) : 0;
    if (!pyramid || !(s > 0) || previewLevel <= 0 || scale <= fitScale * 1.01) return null;
    const level = Math.max(0, Math.min(topLevel(), Math.floor(-Math.log2(s))));
    return level < previewLevel - 0.01 ? level : null;
  }
  function cover(level, margin) {
    const s = fullScale();
    const span = pyramid.tile * Math.pow(2, level);
    return {
      x0: Math.max(0, Math.floor(-x / s / span) - margin),
      y0: Math.max(0, Math.floor(-y / s / span) - margin),
      x1: Math.min(Math.ceil(full.w / span), Math.ceil((viewer.clientWidth - x) / s / span) + margin),
      y1: Math.min(Math.ceil(full.h / span), Math.ceil((viewer.clientHeight - y) / s / span) + margin),
    };
  }
  function tileUrl(key) {
    const [level, tx, ty] = key.split("/");
    return base + "/dzi_files/" + (pyramid.deepest - Number(level)) + "/" + tx + "_" + ty + ".png";
  }
  function place(t) {
    const s = fullScale();
    const span = pyramid.tile * Math.pow(2, t.level);
    const k = Math.pow(2, t.level) * s;
    t.img.style.imageRendering = k > 1.5 ? "pixelated" : "auto";
    t.img.style.transform = "translate(" + (x + t.tx * span * s) + "px," + (y + t.ty * span * s) +
      "px) scale(" + k + ")";
  }
  function drop(key) {
    const t = tiles.get(key);
    if (!t) return;
    if (t.abort) t.abort.abort();
    if (t.img.src.startsWith("blob:")) URL.revokeObjectURL(t.img.src);
    t.img.remove();
    tiles.delete(key);
  }
  function request(key, level, tx, ty) {
    const t = { img: document.createElement("img"), level: level, tx: tx, ty: ty, loaded: false, abort: new AbortController() };
    t.img.alt = "";
    t.img.draggable = false;
    t.img.dataset.tile = key;
    t.img.style.visibility = "hidden";
    // Finer levels above coarser ones.
    t.img.style.zIndex = String(64 - level);
    layer.appendChild(t.img);
    tiles.set(key, t);
    place(t);
    fetch(tileUrl(key), { signal: t.abort.signal, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.blob(); })
      .then(function (blob) {
        if (tiles.get(key) !== t) return;
        t.abort = null;
        t.img.addEventListener("load", function () {
          t.loaded = true;
          t.img.style.visibility = "visible";
          schedule();
        }, { once: true });
        t.img.src = URL.createObjectURL(blob);
      })
      .catch(function () {
        if (tiles.get(key) === t) t.abort = null;
      });
  }
  // Fetches the next finer level around the view ahead of a zoom, a few at a time.
  function prefetch(level) {
    if (level <= 0) return;
    const next = level - 1;
    const r = cover(next, 0);
    let started = 0;
    for (let ty = r.y0; ty < r.y1 && started < PREFETCH_MAX; ty++) {
      for (let tx = r.x0; tx < r.x1 && started < PREFETCH_MAX; tx++) {
        const key = next + "/" + tx + "/" + ty;
        if (prefetched.has(key) || tiles.has(key)) continue;
        const abort = new AbortController();
        prefetched.set(key, abort);
        started++;
        fetch(tileUrl(key), { signal: abort.signal, credentials: "same-origin", priority: "low" })
          .then(function (r) { return r.blob(); })
          .catch(function () { prefetched.delete(key); });
      }
    }
  }
  function drawTiles() {
    frame = false;
    const level = wantedLevel();
    const wanted = new Set();
    let missing = 0;
    if (level !== null) {
      const r = cover(level, 0);
      for (let ty = r.y0; ty < r.y1; ty++) {
        for (let tx = r.x0; tx < r.x1; tx++) {
          const key = level + "/" + tx + "/" + ty;
          wanted.add(key);
          const t = tiles.get(key);
          if (!t) {
            missing++;
            if (!settle) request(key, level, tx, ty);
          } else if (!t.loaded) {
            missing++;
          }
        }
      }
    }
    // Other tiles: unfinished ones are cancelled; loaded ones stay under the wanted level
    // while it is incomplete, if they are in view.
    const shown = viewer.getBoundingClientRect();
    tiles.forEach(function (t, key) {
      if (wanted.has(key)) return place(t);
      if (!t.loaded || missing === 0 || level === null) return drop(key);
      place(t);
      const b = t.img.getBoundingClientRect();
      if (b.right < shown.left || b.left > shown.right || b.bottom < shown.top || b.top > shown.bottom) drop(key);
    });
    // Prefetches no longer near the view are cancelled.
    prefetched.forEach(function (abort, key) {
      if (level === null || Number(key.split("/")[0]) !== level - 1) {
        abort.abort();
        prefetched.delete(key);
      }
    });
    const sharp = missing === 0 && !settle;
    viewer.dataset.sharp = String(sharp);
    if (sharp && level !== null) prefetch(level);
  }
  function schedule() {
    if (!frame) {
      frame = true;
      requestAnimationFrame(drawTiles);
    }
  }
  // Called on every change of the view.
  function apply() {
    img.style.transform = "translate(" + x + "px," + y + "px) scale(" + scale + ")";
    placeOutline();
    placeFound();
    // Zoomed in, one finger pans the mosaic; at the fitted size it scrolls the page.
    viewer.style.touchAction = scale > fitScale * 1.01 ? "none" : "pan-y";
    viewer.dataset.sharp = "false";
    viewer.dataset.zoom = (scale / fitScale).toFixed(3);
    if (settle) clearTimeout(settle);
    settle = setTimeout(function () { settle = null; schedule(); }, SETTLE_MS);
    schedule();
  }
  function maxScale() {
    // Down to 8 screen pixels per full-resolution pixel.
    const ratio = full && img.naturalWidth ? full.w / img.naturalWidth : 1;
    return Math.max(32, 8 * ratio);
  }
  function zoomAt(factor, cx, cy) {
    const next = Math.min(maxScale(), Math.max(fitScale / 2, scale * factor));
    const f = next / scale;
    x = cx - (cx - x) * f;
    y = cy - (cy - y) * f;
    scale = next;
    apply();
  }
  function zoomCentre(factor) {
    zoomAt(factor, viewer.clientWidth / 2, viewer.clientHeight / 2);
  }
  function fit() {
    if (!img.naturalWidth) return;
    // The mosaic fills the viewer's box (the preview is drawn larger than it is when the box is).
    fitScale = Math.min(viewer.clientWidth / img.naturalWidth, viewer.clientHeight / img.naturalHeight);
    scale = fitScale;
    x = (viewer.clientWidth - img.naturalWidth * scale) / 2;
    y = (viewer.clientHeight - img.naturalHeight * scale) / 2;
    apply();
  }
  // The view in a link: `#view=CX,CY,ZOOM`, the centre as a share of the mosaic's width and
  // height and the zoom over the fitted size.
  function viewHash() {
    if (!img.naturalWidth) return "";
    const cx = (viewer.clientWidth / 2 - x) / (img.naturalWidth * scale);
    const cy = (viewer.clientHeight / 2 - y) / (img.naturalHeight * scale);
    return "#view=" + cx.toFixed(4) + "," + cy.toFixed(4) + "," + (scale / fitScale).toFixed(3);
  }
  function showView(hash) {
    const m = /view=(-?[0-9.]+),(-?[0-9.]+),([0-9.]+)/.exec(hash || "");
    if (!m || !img.naturalWidth) return false;
    const zoom = Math.min(maxScale() / fitScale, Math.max(0.5, Number(m[3])));
    scale = fitScale * zoom;
    x = viewer.clientWidth / 2 - Number(m[1]) * img.naturalWidth * scale;
    y = viewer.clientHeight / 2 - Number(m[2]) * img.naturalHeight * scale;
    apply();
    return true;
  }
  let viewShown = false;
  // Once per picture shown: fitted, and a shared link opens at the view it was shared from.
  let settledFor = null;
  function settleView() {
    if (!img.naturalWidth || settledFor === img.currentSrc) return;
    settledFor = img.currentSrc;
    // The full mosaic shown instead of a preview: its own pixels are the finest.
    if (img.dataset.full) full = null;
    fit();
    if (!viewShown) viewShown = showView(location.hash);
    openDeepLink();
  }
  img.addEventListener("load", settleView);
  const shareButton = document.getElementById("share");
  const sharePanel = document.getElementById("share-panel");
  shareButton.addEventListener("click", function () {
    const open = sharePanel.hidden;
    sharePanel.hidden = !open;
    shareButton.setAttribute("aria-expanded", String(open));
    if (!open) return;
    const link = location.origin + location.pathname + viewHash();
    const field = document.getElementById("share-link");
    field.value = link;
    document.getElementById("share-embed").value =
      '<div id="mosaic" style="width: 100%; height: 480px"></div>\n' +
      '<script src="https://cdn.jsdelivr.net/npm/openseadragon@4/build/openseadragon/openseadragon.min.js"></script>\n' +
      '<script>OpenSeadragon({ id: "mosaic", tileSources: "' + location.origin + base + '/dzi" });</script>';
    field.focus();
    field.select();
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(link).catch(function () {});
  });
  viewer.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    const r = viewer.getBoundingClientRect();
    // Lines and pages as pixels; a trackpad's small steps zoom a little, a wheel's notch 20 %.
    const delta = ev.deltaY * (ev.deltaMode === 1 ? 40 : ev.deltaMode === 2 ? 800 : 1);
    const factor = Math.exp(-Math.max(-200, Math.min(200, delta)) * 0.0018);
    zoomAt(factor, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });

  // Pointers: one drags, two pinch (zoom about their midpoint, and pan with it).
  const pointers = new Map();
  let gesture = null;
  function startGesture() {
    const p = Array.from(pointers.values());
    if (p.length === 1) {
      gesture = { px: p[0].x, py: p[0].y, x: x, y: y };
    } else if (p.length >= 2) {
      gesture = {
        distance: Math.hypot(p[1].x - p[0].x, p[1].y - p[0].y) || 1,
        mx: (p[0].x + p[1].x) / 2,
        my: (p[0].y + p[1].y) / 2,
        scale: scale,
        x: x,
        y: y,
      };
    } else {
      gesture = null;
    }
  }
  viewer.addEventListener("pointerdown", function (ev) {
    // The first finger of a new touch: any pointer still held from before lost its release.
    if (ev.isPrimary) pointers.clear();
    const r = viewer.getBoundingClientRect();
    pointers.set(ev.pointerId, { x: ev.clientX - r.left, y: ev.clientY - r.top });
    try {
      viewer.setPointerCapture(ev.pointerId);
    } catch (e) {
      // A pointer the browser no longer tracks: the gesture works without capture.
    }
    startGesture();
  });
  viewer.addEventListener("pointermove", function (ev) {
    if (!pointers.has(ev.pointerId) || !gesture) return;
    const r = viewer.getBoundingClientRect();
    pointers.set(ev.pointerId, { x: ev.clientX - r.left, y: ev.clientY - r.top });
    const p = Array.from(pointers.values());
    // One finger on the fitted mosaic scrolls the page (touch-action: pan-y), not the mosaic.
    if (p.length === 1 && ev.pointerType === "touch" && scale <= fitScale * 1.01) return;
    if (p.length === 1) {
      x = gesture.x + p[0].x - gesture.px;
      y = gesture.y + p[0].y - gesture.py;
    } else {
      const distance = Math.hypot(p[1].x - p[0].x, p[1].y - p[0].y) || 1;
      const mx = (p[0].x + p[1].x) / 2;
      const my = (p[0].y + p[1].y) / 2;
      const next = Math.min(maxScale(), Math.max(fitScale / 2, gesture.scale * distance / gesture.distance));
      const f = next / gesture.scale;
      // The point under the first midpoint stays under the fingers' midpoint.
      x = mx - (gesture.mx - gesture.x) * f;
      y = my - (gesture.my - gesture.y) * f;
      scale = next;
    }
    apply();
  });
  function release(ev) {
    if (!pointers.delete(ev.pointerId)) return;
    startGesture();
  }
  viewer.addEventListener("pointerup", release);
  viewer.addEventListener("pointercancel", release);
  viewer.addEventListener("dblclick", function (ev) {
    const r = viewer.getBoundingClientRect();
    zoomAt(2, ev.clientX - r.left, ev.clientY - r.top);
  });
  viewer.addEventListener("keydown", function (ev) {
    const step = 40;
    if (ev.key === "+" || ev.key === "=") zoomCentre(1.2);
    else if (ev.key === "-") zoomCentre(1 / 1.2);
    else if (ev.key === "0") fit();
    else if (ev.key === "ArrowLeft") { x += step; apply(); }
    else if (ev.key === "ArrowRight") { x -= step; apply(); }
    else if (ev.key === "ArrowUp") { y += step; apply(); }
    else if (ev.key === "ArrowDown") { y -= step; apply(); }
    else return;
    ev.preventDefault();
  });
  document.getElementById("zoom-in").addEventListener("click", function () { zoomCentre(1.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoomCentre(1 / 1.5); });
  document.getElementById("zoom-fit").addEventListener("click", fit);
  const fullScreen = document.getElementById("full-screen");
  if (!document.fullscreenEnabled) fullScreen.hidden = true;
  fullScreen.addEventListener("click", function () {
    if (document.fullscreenElement) document.exitFullscreen();
    else viewer.requestFullscreen().catch(function () {});
  });
  document.addEventListener("fullscreenchange", function () {
    fullScreen.textContent = document.fullscreenElement ? "Exit full screen" : "Full screen";
    fit();
  });
  window.addEventListener("resize", function () {
    if (scale <= fitScale * 1.01) fit();
    else apply();
  });

  // "Which photo is this?": the cell under a resting mouse, a tap, or (Enter) the view's
  // centre is looked up in the job's cell map and named below the viewer, with its thumbnail.
  const cellInfo = document.getElementById("cell-info");
  const cells = new Map();
  let shownCell = null;
  let hover = null;
  // The cell shown below the viewer is outlined in it: `outlined` is its square in the
  // mosaic's full pixels (x, y, width, height).
  const outline = document.getElementById("cell-outline");
  let outlined = null;
  function placeOutline() {
    if (!outline) return;
    if (!outlined || !grid || !img.naturalWidth) {
      outline.hidden = true;
      return;
    }
    const k = scale * img.naturalWidth / grid.w;
    outline.style.left = (x + outlined.x * k) + "px";
    outline.style.top = (y + outlined.y * k) + "px";
    outline.style.width = Math.max(4, outlined.w * k) + "px";
    outline.style.height = Math.max(4, outlined.h * k) + "px";
    outline.hidden = false;
  }
  function cellAt(sx, sy) {
    if (!grid || !img.naturalWidth) return null;
    const fx = (sx - x) / scale * grid.w / img.naturalWidth;
    const fy = (sy - y) / scale * grid.w / img.naturalWidth;
    const col = Math.floor(fx * grid.cols / grid.w);
    const row = Math.floor(fy * grid.rows / grid.h);
    if (col < 0 || row < 0 || col >= grid.cols || row >= grid.rows) return null;
    return row + "/" + col;
  }
  function showCell(key) {
    if (!key || key === shownCell) return;
    shownCell = key;
    let found = cells.get(key);
    if (!found) {
      found = fetch(base + "/cells/" + key, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); });
      cells.set(key, found);
      found.catch(function () { cells.delete(key); });
    }
    found.then(function (cell) {
      if (shownCell !== key) return;
      document.getElementById("cell-caption").textContent = cell.caption;
      document.getElementById("cell-name").textContent = cell.name;
      document.getElementById("cell-turned").textContent =
        cell.transform && cell.transform !== "none" ? " (placed " + cell.transform + ")" : "";
      document.getElementById("cell-row").textContent = String(cell.row + 1);
      document.getElementById("cell-col").textContent = String(cell.col + 1);
      const thumb = document.getElementById("cell-thumb");
      // The tile's own picture from its library; the cell as it is in the mosaic when the
      // library's picture cannot be had (a library since deleted, say).
      thumb.onerror = function () { thumb.onerror = null; thumb.src = cell.thumbnail; };
      thumb.src = cell.picture || cell.thumbnail;
      thumb.alt = cell.caption;
      cellInfo.hidden = false;
      // Named where the eye is: the panel brought into the screen if a tap left it below.
      const below = cellInfo.getBoundingClientRect().bottom - window.innerHeight;
      if (below > 0) window.scrollBy(0, below + 8);
      viewer.dataset.cell = key;
      outlined = { x: cell.x, y: cell.y, w: cell.size, h: cell.height };
      placeOutline();
    }).catch(function () {});
  }
  viewer.addEventListener("pointermove", function (ev) {
    if (ev.pointerType !== "mouse" || pointers.size > 0) return;
    const r = viewer.getBoundingClientRect();
    const key = cellAt(ev.clientX - r.left, ev.clientY - r.top);
    clearTimeout(hover);
    hover = setTimeout(function () { showCell(key); }, 120);
  });
  viewer.addEventListener("pointerleave", function () { clearTimeout(hover); });
  let press = null;
  viewer.addEventListener("pointerdown", function (ev) {
    // A second finger makes a pinch, not a tap.
    press = pointers.size > 1 ? null : { x: ev.clientX, y: ev.clientY, at: Date.now() };
  });
  viewer.addEventListener("pointerup", function (ev) {
    // A tap: little movement, short, and no other finger down.
    if (!press || pointers.size > 0) {
      press = null;
      return;
    }
    const still = Math.hypot(ev.clientX - press.x, ev.clientY - press.y) < 8;
    if (still && Date.now() - press.at < 500) {
      const r = viewer.getBoundingClientRect();
      showCell(cellAt(ev.clientX - r.left, ev.clientY - r.top));
    }
    press = null;
  });
  viewer.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    const r = viewer.getBoundingClientRect();
    showCell(cellAt(r.width / 2, r.height / 2));
    ev.preventDefault();
  });

  // "Where is my photo?": a caption or a file name looked up in the job's placements (answered
  // from its cell map); every cell holding the tile found is outlined, and the view flies to
  // the first. `?tile=NAME` in the page's address does the same when it opens.
  const findForm = document.getElementById("find");
  const findInput = document.getElementById("find-q");
  const findResult = document.getElementById("find-result");
  const foundLayer = document.getElementById("found-cells");
  // The cells outlined, in the mosaic's full pixels (x, y, width, height).
  let foundCells = [];
  function placeFound() {
    if (!foundLayer) return;
    while (foundLayer.children.length > foundCells.length) foundLayer.lastChild.remove();
    if (!grid || !img.naturalWidth) return;
    while (foundLayer.children.length < foundCells.length) {
      const box = document.createElement("div");
      box.className = "found-cell";
      foundLayer.appendChild(box);
    }
    const k = scale * img.naturalWidth / grid.w;
    foundCells.forEach(function (c, i) {
      const box = foundLayer.children[i];
      box.style.left = (x + c.x * k) + "px";
      box.style.top = (y + c.y * k) + "px";
      box.style.width = Math.max(4, c.w * k) + "px";
      box.style.height = Math.max(4, c.h * k) + "px";
    });
  }
  // Centres the view on a cell, zoomed so that it is about a sixth of the viewer across.
  function flyTo(cell) {
    if (!grid || !img.naturalWidth) return;
    const toPreview = img.naturalWidth / grid.w;
    const want = viewer.clientWidth / (6 * Math.max(1, cell.w * toPreview));
    scale = Math.min(maxScale(), Math.max(fitScale, want));
    x = viewer.clientWidth / 2 - (cell.x + cell.w / 2) * toPreview * scale;
    y = viewer.clientHeight / 2 - (cell.y + cell.h / 2) * toPreview * scale;
    apply();
  }
  async function findPhoto(query) {
    const q = query.trim();
    if (!q || !grid) return;
    findResult.textContent = "Looking for " + q + "…";
    let body;
    try {
      const r = await fetch(base + "/placements?q=" + encodeURIComponent(q), { credentials: "same-origin" });
      body = await r.json();
      if (!r.ok) throw new Error(body.error ? body.error.message : String(r.status));
    } catch (e) {
      findResult.textContent = "The search failed: " + e.message + ".";
      return;
    }
    if (!body.tiles.length) {
      foundCells = [];
      placeFound();
      viewer.dataset.found = "0";
      findResult.textContent = "No photo in this mosaic is called “" + q + "”.";
      return;
    }
    const tile = body.tiles[0];
    const w = grid.w / grid.cols;
    const h = grid.h / grid.rows;
    foundCells = tile.cells.map(function (c) { return { x: c[1] * w, y: c[0] * h, w: w, h: h }; });
    viewer.dataset.found = String(tile.uses);
    placeFound();
    // The viewer in the middle of the screen, the cell in the middle of the viewer.
    viewer.scrollIntoView({ block: "center" });
    flyTo(foundCells[0]);
    showCell(tile.cells[0][0] + "/" + tile.cells[0][1]);
    const others = body.tiles.length - 1;
    findResult.textContent = tile.caption + " (" + tile.name + ") is in " + tile.uses +
      (tile.uses === 1 ? " place" : " places") + ", outlined in blue" +
      (others ? "; " + others + (others === 1 ? " other photo matches" : " other photos match") +
        " too: type more of its name" : "") + ".";
  }
  findForm.addEventListener("submit", function (ev) {
    ev.preventDefault();
    findPhoto(findInput.value);
  });
  // The captions to choose from, once the field is first used.
  let namesListed = false;
  findInput.addEventListener("focus", function () {
    if (namesListed || !grid) return;
    namesListed = true;
    fetch(base + "/placements", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { tiles: [] }; })
      .then(function (body) {
        const list = document.getElementById("find-names");
        body.tiles.slice(0, 5000).forEach(function (t) {
          const option = document.createElement("option");
          option.value = t.caption;
          list.appendChild(option);
        });
      })
      .catch(function () { namesListed = false; });
  });
  let deepLinked = false;
  function openDeepLink() {
    const wanted = new URLSearchParams(location.search).get("tile");
    if (deepLinked || !wanted || !grid || !img.naturalWidth) return;
    deepLinked = true;
    findInput.value = wanted;
    findPhoto(wanted);
  }

  // The preview may have loaded before this script ran (the page of a done job names it).
  if (img.complete) settleView();
})();
