"use strict";
// An event's page, to its owner: photos put in, left out or taken out, one or many at once,
// through the API; a new mosaic asked for; the wall link made or ended. The photos, the mosaic
// and the wish list follow what guests send without a reload.
(function () {
  function paintSwatches() {
    document.querySelectorAll(".swatch[data-color]").forEach(function (s) {
      s.style.backgroundColor = s.dataset.color;
    });
  }
  paintSwatches();
  const root = document.getElementById("event");
  const api = "/api/v1/events/" + root.dataset.event;
  const actStatus = document.getElementById("act-status");

  // Select all, and a photo enlarged on tap (delegated: the lists are redrawn as photos come).
  const dialog = document.getElementById("photo-dialog");
  document.addEventListener("change", function (ev) {
    const box = ev.target.closest(".select-all");
    if (!box) return;
    document.querySelectorAll('.event-photos[data-group="' + box.dataset.group + '"] .pick')
      .forEach(function (pick) { pick.checked = box.checked; });
  });
  document.addEventListener("click", function (ev) {
    const button = ev.target.closest(".enlarge");
    if (!button) return;
    const item = button.closest("li");
    document.getElementById("photo-large").src = button.querySelector("img").src;
    document.getElementById("photo-large-from").textContent =
      item.querySelector(".guest-name").textContent + ": " + item.querySelector(".hint").textContent;
    dialog.showModal();
  });

  // What guests send, the mosaic's state and the wish list, redrawn from the page itself
  // every few seconds while it is shown; the photos picked stay picked.
  async function follow() {
    if (document.hidden) return;
    const response = await fetch(location.pathname + location.search, { credentials: "same-origin", cache: "no-store" })
      .catch(function () { return null; });
    if (!response || !response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const picked = new Set(Array.from(document.querySelectorAll(".pick:checked")).map(function (p) { return p.value; }));
    let changed = false;
    document.querySelectorAll("[data-live]").forEach(function (part) {
      const next = fresh.querySelector('[data-live="' + part.dataset.live + '"]');
      if (next && next.innerHTML !== part.innerHTML) {
        part.innerHTML = next.innerHTML;
        changed = true;
      }
    });
    if (!changed) return;
    document.querySelectorAll(".pick").forEach(function (p) { p.checked = picked.has(p.value); });
    paintSwatches();
    root.dataset.updated = String(Date.now());
  }
  setInterval(follow, 2500);
  document.addEventListener("visibilitychange", follow);

  document.getElementById("print-qr").addEventListener("click", function () {
    const w = window.open("", "_blank");
    if (!w) return;
    w.document.title = document.querySelector("h1").textContent;
    const h = w.document.createElement("h1");
    h.textContent = document.querySelector("h1").textContent + ": send us your photos";
    const img = w.document.createElement("img");
    img.src = document.getElementById("qr").src;
    img.style.width = "12cm";
    const p = w.document.createElement("p");
    p.textContent = document.getElementById("contribute-link").href;
    w.document.body.append(h, img, p);
    img.onload = function () { w.print(); };
  });

  const wallStatus = document.getElementById("wall-status");
  const wallLine = document.getElementById("wall-line");
  const wallUrl = document.getElementById("wall-url");
  const wallMake = document.getElementById("wall-make");
  const wallEnd = document.getElementById("wall-end");
  wallMake.addEventListener("click", async function () {
    if (!wallLine.hidden && !confirm("Make a new wall link? Screens showing the old one stop.")) return;
    const response = await fetch(api + "/wall", { method: "POST", credentials: "same-origin" });
    if (!response.ok) {
      wallStatus.textContent = "Not made: " + (await messageOf(response)) + ".";
      return;
    }
    const body = await response.json();
    wallUrl.href = body.url;
    wallUrl.textContent = body.url;
    wallUrl.dataset.share = body.url;
    wallLine.hidden = false;
    wallEnd.hidden = false;
    wallMake.textContent = "New wall link (ends this one)";
    wallStatus.textContent = "Open this link on the screen at the venue.";
    if (window.tesseraShare) window.tesseraShare();
  });
  wallEnd.addEventListener("click", async function () {
    if (!confirm("End the wall link? Screens showing it stop.")) return;
    const response = await fetch(api + "/wall", { method: "DELETE", credentials: "same-origin" });
    if (!response.ok) {
      wallStatus.textContent = "Not ended: " + (await messageOf(response)) + ".";
      return;
    }
    wallLine.hidden = true;
    wallEnd.hidden = true;
    wallMake.textContent = "Make a wall link";
    wallStatus.textContent = "Ended: screens showing it stop.";
  });

  // A board: the printer link made, the last cells filled.
  const boardStatus = document.getElementById("board-status");
  const printerMake = document.getElementById("printer-make");
  if (printerMake) {
    printerMake.addEventListener("click", async function () {
      const line = document.getElementById("printer-line");
      if (!line.hidden && !confirm("Make a new printer link? Stations holding the old one stop.")) return;
      const response = await fetch(api + "/printer", { method: "POST", credentials: "same-origin" });
      if (!response.ok) {
        boardStatus.textContent = "Not made: " + (await messageOf(response)) + ".";
        return;
      }
      const body = await response.json();
      const link = document.getElementById("printer-url");
      link.href = body.url;
      link.textContent = body.url;
      line.hidden = false;
      printerMake.textContent = "New printer link (ends this one)";
      boardStatus.textContent = "Open this link on each printer station.";
    });
    document.querySelectorAll("#fill-photos, #fill-colour").forEach(function (button) {
      button.addEventListener("click", async function () {
        if (!confirm("Fill every free cell now? Photos sent later find the board full.")) return;
        const response = await fetch(api + "/board/fill", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          credentials: "same-origin",
          body: JSON.stringify({ with: button.dataset.with }),
        });
        if (!response.ok) {
          boardStatus.textContent = "Not filled: " + (await messageOf(response)) + ".";
          return;
        }
        const body = await response.json();
        boardStatus.textContent = body.filled.length + " cells filled: their stickers print as the others.";
        const filled = document.getElementById("board-filled");
        filled.textContent = String(Number(filled.textContent) + body.filled.length);
      });
    });
  }

  async function messageOf(response) {
    const body = await response.json().catch(function () { return {}; });
    return (body.error && body.error.message) || "status " + response.status;
  }

  // The filter shows its choice at once; the page works without this too.
  document.querySelectorAll("#photo-filter select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  // Every photo waiting, put in with one request, however many pages they fill.
  document.addEventListener("click", async function (ev) {
    const button = ev.target.closest("[data-every]");
    if (!button) return;
    if (!confirm("Put all " + button.dataset.total + " waiting photos in the mosaic?")) return;
    button.disabled = true;
    actStatus.textContent = "Working on " + button.dataset.total + "…";
    const response = await fetch(api + "/decisions", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ state: "approved", every: button.dataset.every }),
    });
    button.disabled = false;
    if (!response.ok) {
      actStatus.textContent = "Not done: " + (await messageOf(response)) + ".";
      return;
    }
    const done = (await response.json()).changed;
    actStatus.textContent = "Done: " + done + " photo" + (done === 1 ? "" : "s") + " put in.";
    await follow();
  });

  document.querySelectorAll("[data-act]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const picked = Array.from(document.querySelectorAll(".pick:checked")).map(function (p) { return p.value; });
      if (!picked.length) {
        actStatus.textContent = "Select one or more photos first.";
        return;
      }
      const act = button.dataset.act;
      let done = 0;
      if (act !== "delete") {
        // One request decides them all.
        actStatus.textContent = "Working on " + picked.length + "…";
        const response = await fetch(api + "/decisions", {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ state: act, photos: picked }),
        });
        if (!response.ok) {
          actStatus.textContent = "Not done: " + (await messageOf(response)) + ".";
          return;
        }
        done = (await response.json()).changed;
      }
      for (const id of act === "delete" ? picked : []) {
        actStatus.textContent = "Working: " + done + " of " + picked.length + "…";
        const response = await fetch(api + "/photos/" + id, { method: "DELETE", credentials: "same-origin" });
        if (!response.ok) {
          actStatus.textContent = "Stopped after " + done + ": " + (await messageOf(response)) + ".";
          return;
        }
        done += 1;
      }
      actStatus.textContent = "Done: " + done + " photo" + (done === 1 ? "" : "s") + ".";
      await follow();
    });
  });

  const make = document.getElementById("make");
  const makeStatus = document.getElementById("make-status");
  make.addEventListener("click", async function () {
    make.disabled = true;
    makeStatus.textContent = "Gathering the approved photos for a new mosaic…";
    const response = await fetch(api + "/mosaic", { method: "POST", credentials: "same-origin" });
    if (!response.ok) {
      makeStatus.textContent = "Not made: " + (await messageOf(response)) + ".";
      make.disabled = false;
      return;
    }
    await response.json();
    makeStatus.textContent = "Under way: it shows here when it is ready.";
    make.disabled = false;
    await follow();
  });
  const settings = document.getElementById("settings");
  settings.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    const status = document.getElementById("settings-status");
    const perGuest = Number(document.getElementById("per-guest").value);
    const response = await fetch(api, {
      method: "PATCH",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        open: document.getElementById("open").checked,
        approval: document.getElementById("approval").checked,
        per_guest: perGuest,
        auto_after_seconds: Number(document.getElementById("auto-after").value),
        overflow: document.getElementById("overflow").value,
        review: document.getElementById("review").checked,
        consent: document.getElementById("consent").value,
        retention_days: Number(document.getElementById("retention").value),
      }),
    });
    status.textContent = response.ok ? "Saved." : "Not saved: " + (await messageOf(response)) + ".";
  });
  root.dataset.ready = "true";
})();
