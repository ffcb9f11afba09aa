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
    bands.setAttribute("aria-label", done.size + " of " + total + " slices done");
  }

  function showResult(job) {
    if (shown) return;
    shown = true;
    if (job.output) full = { w: job.output.width, h: job.output.height };
    result.hidden = false;
    // The downscaled preview; the full mosaic when there is none (a very large one).
    img.addEventListener("error", function () {
      if (!img.dataset.full) {
        img.dataset.full = "1";
        img.src = base + "/result";
      }
    });
    img.src = base + "/preview";
    // The download's size, when the page was loaded before the mosaic was done.
    const download = document.getElementById("download");
    if (!/, [0-9.]+ [kMG]?B\)$|bytes\)$/.test(download.textContent)) {
      fetch(base + "/result", { method: "HEAD", credentials: "same-origin" }).then(function (r) {
        const n = Number(r.headers.get("Content-Length"));
        if (r.ok && n > 0) download.textContent = "Download the full mosaic (PNG, " + sizeInWords(n) + ")";
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

  // The quality figures, once the job is planned.
  function showQuality(q) {
    if (!q) return;
    const share = function (x) { return (x * 100).toFixed(1) + " %"; };
    const figures = {
      "q-de00-mean": q.de00_mean.toFixed(2),
      "q-de00-p95": q.de00_p95.toFixed(2),
      "q-distinct": String(q.distinct),
      "q-max-uses": String(q.max_uses),
      "q-dup-r1": share(q.dup_r1),
      "q-dup-r5": share(q.dup_r5),
    };
    Object.keys(figures).forEach(function (id) {
      document.getElementById(id).textContent = figures[id];
    });
    document.getElementById("quality").hidden = false;
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

  // The viewer: wheel zoom around the pointer, drag to pan, keys for the same. `scale` is screen
  // pixels per preview pixel; zoomed in past the preview's own resolution, 256 px tiles of the
  // pyramid (level 0: full resolution, level l: shrunk by 2^l) cover the visible area.
  const viewer = document.getElementById("viewer");
  const TILE = 256;
  const layer = document.createElement("div");
  layer.style.position = "absolute";
  layer.style.inset = "0";
  layer.style.pointerEvents = "none";
  viewer.appendChild(layer);
  const tiles = new Map();
  let scale = 1;
  let x = 0;
  let y = 0;
  let pending = false;
  function topLevel() {
    let level = 0;
    while (level < 31 && (Math.max(full.w, full.h) - 1) / Math.pow(2, level) >= TILE) level++;
    return level;
  }
  function drawTiles() {
    pending = false;
    const wanted = new Set();
    // Screen pixels per full-resolution pixel.
    const s = img.naturalWidth && full ? scale * img.naturalWidth / full.w : 0;
    const previewLevel = full && img.naturalWidth ? Math.log2(full.w / img.naturalWidth) : 0;
    if (s > 0 && previewLevel > 0 && scale > 1.01) {
      const level = Math.max(0, Math.min(topLevel(), Math.floor(-Math.log2(s))));
      // Only levels finer than the preview add anything.
      if (level < previewLevel - 0.01) {
        const span = TILE * Math.pow(2, level);
        const x0 = Math.max(0, Math.floor(-x / s / span));
        const y0 = Math.max(0, Math.floor(-y / s / span));
        const x1 = Math.min(Math.ceil(full.w / span), Math.ceil((viewer.clientWidth - x) / s / span));
        const y1 = Math.min(Math.ceil(full.h / span), Math.ceil((viewer.clientHeight - y) / s / span));
        for (let ty = y0; ty < y1; ty++) {
          for (let tx = x0; tx < x1; tx++) {
            const key = level + "/" + tx + "/" + ty;
            wanted.add(key);
            let t = tiles.get(key);
            if (!t) {
              t = document.createElement("img");
              t.alt = "";
              t.draggable = false;
              t.style.visibility = "hidden";
              t.addEventListener("load", function () { t.style.visibility = "visible"; });
              t.src = base + "/tiles/" + key;
              layer.appendChild(t);
              tiles.set(key, t);
            }
            const k = Math.pow(2, level) * s;
            t.style.imageRendering = k > 1.5 ? "pixelated" : "auto";
            t.style.transform = "translate(" + (x + tx * span * s) + "px," + (y + ty * span * s) +
              "px) scale(" + k + ")";
          }
        }
      }
    }
    tiles.forEach(function (t, key) {
      if (!wanted.has(key)) {
        t.remove();
        tiles.delete(key);
      }
    });
  }
  function apply() {
    img.style.transform = "translate(" + x + "px," + y + "px) scale(" + scale + ")";
    if (!pending) {
      pending = true;
      requestAnimationFrame(drawTiles);
    }
  }
  function maxScale() {
    // Down to 8 screen pixels per full-resolution pixel.
    const ratio = full && img.naturalWidth ? full.w / img.naturalWidth : 1;
    return Math.max(32, 8 * ratio);
  }
  function zoomAt(factor, cx, cy) {
    const next = Math.min(maxScale(), Math.max(0.05, scale * factor));
    const f = next / scale;
    x = cx - (cx - x) * f;
    y = cy - (cy - y) * f;
    scale = next;
    apply();
  }
  function fit() {
    if (!img.naturalWidth) return;
    scale = Math.min(viewer.clientWidth / img.naturalWidth, viewer.clientHeight / img.naturalHeight, 1);
    x = (viewer.clientWidth - img.naturalWidth * scale) / 2;
    y = (viewer.clientHeight - img.naturalHeight * scale) / 2;
    apply();
  }
  img.addEventListener("load", function () {
    // The full mosaic shown instead of a preview: its own pixels are the finest.
    if (img.dataset.full) full = null;
    fit();
  });
  viewer.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    const r = viewer.getBoundingClientRect();
    zoomAt(ev.deltaY < 0 ? 1.2 : 1 / 1.2, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });
  let drag = null;
  viewer.addEventListener("pointerdown", function (ev) {
    drag = { px: ev.clientX, py: ev.clientY, x: x, y: y };
    viewer.setPointerCapture(ev.pointerId);
  });
  viewer.addEventListener("pointermove", function (ev) {
    if (!drag) return;
    x = drag.x + ev.clientX - drag.px;
    y = drag.y + ev.clientY - drag.py;
    apply();
  });
  viewer.addEventListener("pointerup", function () { drag = null; });
  viewer.addEventListener("keydown", function (ev) {
    const cx = viewer.clientWidth / 2;
    const cy = viewer.clientHeight / 2;
    const step = 40;
    if (ev.key === "+" || ev.key === "=") zoomAt(1.2, cx, cy);
    else if (ev.key === "-") zoomAt(1 / 1.2, cx, cy);
    else if (ev.key === "0") fit();
    else if (ev.key === "ArrowLeft") { x += step; apply(); }
    else if (ev.key === "ArrowRight") { x -= step; apply(); }
    else if (ev.key === "ArrowUp") { y += step; apply(); }
    else if (ev.key === "ArrowDown") { y -= step; apply(); }
    else return;
    ev.preventDefault();
  });
  window.addEventListener("resize", apply);
})();
