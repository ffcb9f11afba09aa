"use strict";
// The wall display, for a screen at the venue: the event's latest finished mosaic, as large as
// the screen allows beside the side panel, swapped in as new mosaics are made; the newest
// photos in turn beside it, each shown from the photo itself with its place in the mosaic
// marked; the guests' link and its QR code.
(function () {
  const root = document.getElementById("wall");
  const wall = root.dataset.wall;
  const api = "/api/v1/events/" + root.dataset.event + "/wall" + (wall ? "?token=" + encodeURIComponent(wall) : "");
  const stage = document.getElementById("wall-stage");
  const mosaic = document.getElementById("wall-mosaic");
  const mark = document.getElementById("wall-mark");
  const newest = document.getElementById("wall-newest");
  const photo = document.getElementById("wall-photo");
  const photoName = document.getElementById("wall-photo-name");
  let shown = null;
  let queue = [];
  let lastNewest = null;
  let current = null;
  // Each photo's first cell in the mosaic shown, asked once per mosaic.
  let cells = new Map();

  async function json(url) {
    const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    return response.ok ? response.json() : null;
  }

  // The mosaic at the largest size that fits the stage, centred in it.
  function fit() {
    if (!shown) return;
    const box = stage.getBoundingClientRect();
    const scale = Math.min(box.width / shown.width, box.height / shown.height);
    mosaic.style.width = Math.floor(shown.width * scale) + "px";
    mosaic.style.height = Math.floor(shown.height * scale) + "px";
    if (current) place(current);
  }

  function place(cell) {
    const [row, col] = cell;
    const w = mosaic.clientWidth / shown.cols;
    const h = mosaic.clientHeight / shown.rows;
    mark.style.left = (mosaic.offsetLeft + w * col) + "px";
    mark.style.top = (mosaic.offsetTop + h * row) + "px";
    mark.style.width = Math.max(6, w) + "px";
    mark.style.height = Math.max(6, h) + "px";
    mark.hidden = false;
  }

  async function refresh() {
    const view = await json(api).catch(function () { return null; });
    if (!view) return;
    const m = view.mosaic;
    if (m && (!shown || shown.job !== m.job)) {
      shown = m;
      cells = new Map();
      current = null;
      mark.hidden = true;
      mosaic.onload = fit;
      mosaic.src = m.preview_url;
      mosaic.hidden = false;
      document.getElementById("wall-empty").hidden = true;
      root.dataset.mosaic = m.job;
    }
    queue = view.newest || [];
    // A photo that just came is shown at once.
    if (queue.length && queue[0].id !== lastNewest) {
      lastNewest = queue[0].id;
      turn = 0;
      next();
    }
  }

  // The next of the newest photos: its picture beside the mosaic, its first cell marked.
  let turn = 0;
  async function next() {
    if (!queue.length) return;
    const p = queue[turn % queue.length];
    turn += 1;
    photo.src = p.picture_url;
    photoName.textContent = p.guest_name ? "From " + p.guest_name : "From a guest";
    newest.hidden = false;
    root.dataset.newest = p.id;
    if (!shown) return;
    if (!cells.has(p.tile)) {
      // Found by its tile (its id), not its file name: two guests' IMG_0001.JPG are two photos.
      const found = await json(shown.placements_url + "&q=" + encodeURIComponent(p.tile))
        .catch(function () { return null; });
      const tile = found && (found.tiles || []).find(function (t) { return t.name === p.tile; });
      // A failed answer is asked again at the photo's next turn.
      if (found) cells.set(p.tile, tile && tile.cells.length ? tile.cells[0] : null);
    }
    current = cells.get(p.tile) || null;
    if (!current) {
      mark.hidden = true;
      return;
    }
    place(current);
  }

  window.addEventListener("resize", fit);
  refresh();
  setInterval(refresh, 5000);
  setInterval(next, 8000);
})();
