"use strict";
// The wall display: the event's latest finished mosaic, full screen, swapped in as new mosaics
// are made; the newest photos in turn, each shown large with its place in the mosaic marked.
(function () {
  const root = document.getElementById("wall");
  const api = "/api/v1/events/" + root.dataset.event;
  const mosaic = document.getElementById("wall-mosaic");
  const mark = document.getElementById("wall-mark");
  const newest = document.getElementById("wall-newest");
  const photo = document.getElementById("wall-photo");
  const photoName = document.getElementById("wall-photo-name");
  const NEWEST = 8;
  let shown = null;
  let size = null;
  let queue = [];

  async function json(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    return response.ok ? response.json() : null;
  }

  async function refresh() {
    const event = await json(api).catch(function () { return null; });
    if (!event) return;
    const latest = (event.mosaics || []).slice().reverse();
    for (const job of latest) {
      const state = await json("/api/v1/jobs/" + job).catch(function () { return null; });
      if (!state || state.state !== "done") continue;
      if (job !== shown) {
        shown = job;
        size = [state.resolved.cols, state.resolved.rows];
        mosaic.src = "/api/v1/jobs/" + job + "/preview";
        mosaic.hidden = false;
        document.getElementById("wall-empty").hidden = true;
        root.dataset.mosaic = job;
      }
      break;
    }
    const approved = (event.photos || []).filter(function (p) { return p.state === "approved"; });
    queue = approved.slice(-NEWEST).reverse();
  }

  // The next of the newest photos: its picture large, its first cell marked on the mosaic.
  let turn = 0;
  async function next() {
    if (!shown || !queue.length) return;
    const p = queue[turn % queue.length];
    turn += 1;
    // Found by its tile (its id), not its file name: two guests' IMG_0001.JPG are two photos.
    const found = await json("/api/v1/jobs/" + shown + "/placements?q=" + encodeURIComponent(p.tile))
      .catch(function () { return null; });
    const tile = found && (found.tiles || []).find(function (t) { return t.name === p.tile; });
    if (!tile || !tile.cells.length) return;
    const [row, col] = tile.cells[0];
    photo.src = "/api/v1/jobs/" + shown + "/cells/" + row + "/" + col + "/picture";
    photoName.textContent = p.name;
    newest.hidden = false;
    const box = mosaic.getBoundingClientRect();
    mark.style.left = (mosaic.offsetLeft + box.width * col / size[0]) + "px";
    mark.style.top = (mosaic.offsetTop + box.height * row / size[1]) + "px";
    mark.style.width = Math.max(6, box.width / size[0]) + "px";
    mark.style.height = Math.max(6, box.height / size[1]) + "px";
    mark.hidden = false;
    root.dataset.newest = p.name;
  }

  refresh().then(next);
  setInterval(refresh, 15000);
  setInterval(next, 6000);
})();
