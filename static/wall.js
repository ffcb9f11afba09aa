"use strict";
// The wall display, for a screen at the venue: the event's latest finished mosaic, as large as
// the screen allows beside the side panel, swapped in as new mosaics are made; the newest
// photos in turn beside it, each shown from the photo itself with its place in the mosaic
// marked; the guests' link and its QR code. An event made as a board shows the board instead,
// filling in as each photo gets its cell, with the share filled and the colours still wanted.
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

  // A board (a sticker wall): drawn cell by cell, the target's colour faint in the free
  // cells, each sticker's colour in its own; a new photo flies from the side to its cell.
  const canvas = document.getElementById("wall-board");
  const flyer = document.getElementById("wall-flyer");
  let board = null;
  const flown = new Set();

  function drawBoard() {
    if (!board) return;
    const box = stage.getBoundingClientRect();
    const side = Math.max(1, Math.floor(Math.min(box.width / board.cols, box.height / board.rows)));
    const ratio = window.devicePixelRatio || 1;
    canvas.style.width = side * board.cols + "px";
    canvas.style.height = side * board.rows + "px";
    canvas.width = Math.round(side * board.cols * ratio);
    canvas.height = Math.round(side * board.rows * ratio);
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.fillStyle = "#000";
    g.fillRect(0, 0, side * board.cols, side * board.rows);
    g.globalAlpha = 0.45;
    board.cells.forEach(function (colour, i) {
      g.fillStyle = colour;
      g.fillRect((i % board.cols) * side, Math.floor(i / board.cols) * side, side, side);
    });
    g.globalAlpha = 1;
    board.filled.forEach(function (f) {
      g.fillStyle = f.colour;
      g.fillRect((f.col - 1) * side, (f.row - 1) * side, side, side);
    });
    if (side >= 6) {
      g.strokeStyle = "#0008";
      g.lineWidth = 1;
      for (let c = 0; c <= board.cols; c++) { g.beginPath(); g.moveTo(c * side + 0.5, 0); g.lineTo(c * side + 0.5, side * board.rows); g.stroke(); }
      for (let r = 0; r <= board.rows; r++) { g.beginPath(); g.moveTo(0, r * side + 0.5); g.lineTo(side * board.cols, r * side + 0.5); g.stroke(); }
    }
    board.side = side;
  }

  function cellBox(cell) {
    const r = canvas.getBoundingClientRect();
    return { left: r.left + (cell.col - 1) * board.side, top: r.top + (cell.row - 1) * board.side, side: board.side };
  }

  function markCell(cell) {
    const b = cellBox(cell);
    const s = stage.getBoundingClientRect();
    mark.style.left = (b.left - s.left) + "px";
    mark.style.top = (b.top - s.top) + "px";
    mark.style.width = Math.max(6, b.side) + "px";
    mark.style.height = Math.max(6, b.side) + "px";
    mark.hidden = false;
  }

  // The newest photo's picture flies from the side panel into its cell, once per photo.
  function fly(p) {
    if (flown.has(p.id)) return;
    flown.add(p.id);
    const from = photo.getBoundingClientRect();
    const to = cellBox(p.cell);
    flyer.style.transition = "none";
    flyer.src = p.picture_url;
    flyer.style.width = from.width + "px";
    flyer.style.height = from.height + "px";
    flyer.style.transform = "translate(" + from.left + "px," + from.top + "px)";
    flyer.hidden = false;
    void flyer.offsetWidth;
    flyer.style.transition = "";
    flyer.style.width = Math.max(6, to.side) + "px";
    flyer.style.height = Math.max(6, to.side) + "px";
    flyer.style.transform = "translate(" + to.left + "px," + to.top + "px)";
    setTimeout(function () { flyer.hidden = true; }, 1800);
  }

  function showBoard(b) {
    board = b;
    canvas.hidden = false;
    mosaic.hidden = true;
    document.getElementById("wall-empty").hidden = true;
    document.getElementById("wall-board-side").hidden = false;
    const cells = b.cols * b.rows;
    const share = Math.floor((100 * b.filled.length) / cells);
    document.getElementById("wall-filled").textContent =
      b.filled.length + " of " + cells + " cells filled (" + share + " %)";
    root.dataset.filled = String(b.filled.length);
    const list = document.getElementById("wall-wishes");
    list.replaceChildren();
    b.wishlist.slice(0, 5).forEach(function (w) {
      const li = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = w.color;
      li.append(swatch, w.words + " (" + w.photos + (w.photos === 1 ? " photo)" : " photos)"));
      list.append(li);
    });
    document.getElementById("wall-wish-title").hidden = !b.wishlist.length;
    drawBoard();
  }

  async function refresh() {
    const view = await json(api).catch(function () { return null; });
    if (!view) return;
    if (view.board) {
      showBoard(view.board);
      queue = view.newest || [];
      if (queue.length && queue[0].id !== lastNewest) {
        lastNewest = queue[0].id;
        turn = 0;
        next();
      }
      return;
    }
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
    if (board) {
      if (!p.cell) { mark.hidden = true; return; }
      root.dataset.cell = p.cell.row + "," + p.cell.col;
      markCell(p.cell);
      fly(p);
      return;
    }
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

  window.addEventListener("resize", function () { if (board) drawBoard(); else fit(); });
  refresh();
  setInterval(refresh, 5000);
  setInterval(next, 8000);
})();
