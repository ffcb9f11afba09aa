"use strict";
// The contribute page: a guest's photos, reduced in the browser and sent with the link's token,
// then followed: waiting, in the mosaic (with a link to find each once a mosaic holds it) or
// left out. The event's answer is asked again every few seconds while the page is open.
(function () {
  document.querySelectorAll(".swatch[data-color]").forEach(function (s) {
    s.style.backgroundColor = s.dataset.color;
  });
  const form = document.getElementById("contribute-form");
  const mine = document.getElementById("mine");
  const empty = document.getElementById("mine-empty");
  const main = document.getElementById("main");
  const eventId = form ? form.dataset.event : location.pathname.split("/")[2];
  const token = form ? form.dataset.token : new URLSearchParams(location.search).get("token");
  const api = "/api/v1/events/" + eventId;
  const WORDS = { waiting: "waiting for the organiser", approved: "in the mosaic", rejected: "left out by the organiser" };

  // Photos this guest has sent that are still there: the cap counts them.
  let sentCount = 0;

  function show(event) {
    sentCount = (event.photos || []).length;
    mine.replaceChildren();
    const mosaic = event.mosaic && event.mosaic.job;
    (event.photos || []).forEach(function (photo) {
      const li = document.createElement("li");
      // Its state once prepared; "received" until then.
      li.dataset.state = photo.prepared ? photo.state : "received";
      li.dataset.name = photo.name;
      li.dataset.photo = photo.id;
      // Received at once; its picture once a processor has prepared it.
      // More photos than the mosaic's cells, taking turns: one not in this turn waits.
      const waitsItsTurn = photo.state === "approved" && photo.in_turn === false;
      const words = !photo.prepared ? "received, being prepared"
        : photo.unreadable ? "cannot be read: " + photo.unreadable
          : waitsItsTurn ? "approved, waiting for its turn in a next mosaic"
            : (WORDS[photo.state] || photo.state);
      if (photo.prepared && !photo.unreadable) {
        const img = document.createElement("img");
        img.src = api + "/photos/" + photo.id + "/thumbnail";
        img.alt = "";
        img.width = 72;
        img.height = 72;
        img.className = "mine-thumb";
        li.append(img);
      }
      li.append(" " + photo.name + ": " + words);
      if (photo.cell) {
        // A board: the sticker's place, as printed on it.
        const where = document.createElement("strong");
        where.className = "cell-of";
        where.textContent = "row " + photo.cell.row + ", column " + photo.cell.col;
        li.append(" · your sticker goes at ", where);
      }
      if (photo.state === "approved" && mosaic && !waitsItsTurn) {
        // Found by its tile (its id), not its file name: another guest's IMG_0001.JPG is
        // another photo.
        const a = document.createElement("a");
        a.href = "/jobs/" + mosaic + "?share=" + encodeURIComponent(token) +
          "&tile=" + encodeURIComponent(photo.tile);
        a.textContent = "Find it in the mosaic";
        a.className = "find-mine";
        li.append(" · ", a);
      }
      const back = document.createElement("button");
      back.type = "button";
      back.className = "take-back";
      back.textContent = "Take back";
      back.addEventListener("click", async function () {
        if (!window.confirm("Take " + photo.name + " out of the mosaic? It is deleted.")) return;
        back.disabled = true;
        const response = await fetch(api + "/photos/" + photo.id, {
          method: "DELETE",
          headers: { "X-Requested-With": "tessera" },
          credentials: "same-origin",
        }).catch(function () { return null; });
        if (response && (response.ok || response.status === 404)) {
          li.remove();
          empty.hidden = mine.children.length > 0;
        } else {
          back.disabled = false;
        }
      });
      li.append(" ", back);
      mine.append(li);
    });
    empty.hidden = mine.children.length > 0;
    eraseAll.hidden = mine.children.length < 2;
    drawBoard(event);
  }

  // A board's picture, the guest's cells marked on it: where to stick their stickers.
  function drawBoard(event) {
    const figure = document.getElementById("board-figure");
    const board = event.board;
    const cells = (event.photos || []).map(function (p) { return p.cell; }).filter(Boolean);
    if (!figure || !board || !cells.length) {
      if (figure) figure.hidden = true;
      return;
    }
    figure.hidden = false;
    const canvas = document.getElementById("board-map");
    const width = Math.min(figure.clientWidth || 320, 480);
    const side = Math.max(2, Math.floor(width / board.cols));
    const ratio = window.devicePixelRatio || 1;
    canvas.style.width = side * board.cols + "px";
    canvas.style.height = side * board.rows + "px";
    canvas.width = Math.round(side * board.cols * ratio);
    canvas.height = Math.round(side * board.rows * ratio);
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    board.cells.forEach(function (colour, i) {
      g.fillStyle = colour;
      g.fillRect((i % board.cols) * side, Math.floor(i / board.cols) * side, side, side);
    });
    g.fillStyle = "#fff8";
    g.fillRect(0, 0, side * board.cols, side * board.rows);
    g.lineWidth = Math.max(2, side / 4);
    cells.forEach(function (c) {
      g.strokeStyle = "#d00";
      g.strokeRect((c.col - 1) * side - g.lineWidth / 2, (c.row - 1) * side - g.lineWidth / 2,
        side + g.lineWidth, side + g.lineWidth);
    });
    const words = cells.map(function (c) { return "row " + c.row + ", column " + c.col; });
    document.getElementById("board-caption").textContent =
      "The board, " + board.rows + " rows by " + board.cols + " columns: yours at " + words.join("; ") +
      ", counted from the top left.";
  }

  // Every photo of the guest's out at once.
  const eraseAll = document.createElement("button");
  eraseAll.type = "button";
  eraseAll.id = "erase-all";
  eraseAll.className = "take-back";
  eraseAll.textContent = "Take back all my photos";
  eraseAll.hidden = true;
  mine.after(eraseAll);
  eraseAll.addEventListener("click", async function () {
    if (!window.confirm("Take every photo you sent out of the mosaic? They are deleted.")) return;
    eraseAll.disabled = true;
    const response = await fetch(api + "/photos?token=" + encodeURIComponent(token), {
      method: "DELETE",
      headers: { "X-Requested-With": "tessera" },
      credentials: "same-origin",
    }).catch(function () { return null; });
    eraseAll.disabled = false;
    if (response && response.ok) await refresh();
  });

  async function refresh() {
    try {
      const response = await fetch(api + "?token=" + encodeURIComponent(token), { credentials: "same-origin" });
      if (response.ok) show(await response.json());
    } catch (e) {
      // Offline for a moment: the next refresh tries again.
    }
  }

  if (form) {
    const error = document.getElementById("error");
    const status = document.getElementById("status");
    const files = document.getElementById("files");
    const limit = Number(form.dataset.maxUpload) || 0;
    const perGuest = Number(form.dataset.perGuest) || 0;
    // The name a guest gives is kept on this phone, so that it is given once.
    const guestName = document.getElementById("guest-name");
    const NAME_KEY = "tessera-guest-name";
    try { guestName.value = localStorage.getItem(NAME_KEY) || ""; } catch (e) { /* private mode */ }
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      error.hidden = true;
      if (!files.files.length) {
        error.textContent = "Choose one or more photos first.";
        error.hidden = false;
        files.setAttribute("aria-invalid", "true");
        files.focus();
        return;
      }
      files.removeAttribute("aria-invalid");
      const consent = document.getElementById("consent");
      if (consent && !consent.checked) {
        error.textContent = "Tick the box to agree before sending your photos.";
        error.hidden = false;
        consent.focus();
        return;
      }
      const send = document.getElementById("send");
      send.disabled = true;
      let chosen = Array.from(files.files);
      let note = "";
      // Over the guest's cap: only as many as the event still takes from them are sent.
      if (perGuest > 0 && chosen.length > perGuest - sentCount) {
        const left = Math.max(0, perGuest - sentCount);
        if (!left) {
          error.textContent = "Not sent: this event takes " + perGuest + " photos from each guest, and you have sent them all.";
          error.hidden = false;
          send.disabled = false;
          return;
        }
        note = " This event takes " + left + " more from you: the first " + left + " of the " + chosen.length + " chosen were sent.";
        chosen = chosen.slice(0, left);
      }
      try {
        status.textContent = "Making " + chosen.length + " photo(s) smaller…";
        const data = new FormData();
        const name = guestName.value.trim();
        try { localStorage.setItem(NAME_KEY, name); } catch (e) { /* private mode */ }
        if (name) data.append("guest_name", name);
        if (consent) data.append("consent", "true");
        let bytes = 0;
        for (const file of chosen) {
          const small = await window.TesseraPhotos.reduced(file);
          bytes += small.size;
          data.append("files", small, file.name);
        }
        if (limit > 0 && bytes > limit) {
          throw new Error("these photos are too large together: send fewer at a time");
        }
        status.textContent = "Sending…";
        const response = await fetch(api + "/photos", {
          method: "POST",
          body: data,
          headers: { "X-Contribute-Token": token },
          credentials: "same-origin",
        });
        const body = await response.json().catch(function () { return {}; });
        if (!response.ok) {
          throw new Error((body.error && body.error.message) || "the photos were not taken (" + response.status + ")");
        }
        status.textContent = "Sent " + body.photos.length + " photo(s). Thank you!" + note;
        // The files of the batch that were not taken, each with its reason.
        if (body.refused && body.refused.length) {
          error.textContent = "Not taken: " + body.refused.map(function (r) { return r.reason; }).join("; ") + ".";
          error.hidden = false;
        }
        files.value = "";
        await refresh();
      } catch (e) {
        error.textContent = "Not sent: " + e.message + ".";
        error.hidden = false;
        status.textContent = "";
      } finally {
        send.disabled = false;
      }
    });
  }
  refresh();
  setInterval(refresh, 4000);
  main.dataset.ready = "true";
})();
