"use strict";
// The printer station: how many stickers wait, a sheet taken as soon as enough fill it (or
// now, when asked), shown to print, and every sheet taken listed to print again. Each sticker
// comes out once across every station: the server hands each to one sheet. Each sheet's
// keepsakes (its guests' photos whole, 4 x 6 inches) print from its row.
(function () {
  const root = document.getElementById("printer");
  const token = root.dataset.token;
  const api = "/api/v1/events/" + root.dataset.event + "/sheets";
  const paper = document.getElementById("paper");
  const auto = document.getElementById("auto");
  const take = document.getElementById("take");
  const status = document.getElementById("printer-status");
  const counts = document.getElementById("printer-counts");
  const body = document.querySelector("#sheets tbody");
  let taking = false;

  function query(extra) {
    const q = new URLSearchParams(extra || {});
    q.set("paper", paper.value);
    if (token) q.set("token", token);
    return "?" + q.toString();
  }

  function cellWords(c) { return "row " + c.row + ", column " + c.col; }

  function showSheets(view) {
    counts.textContent = view.waiting + " sticker" + (view.waiting === 1 ? "" : "s") +
      " waiting; a sheet holds " + view.per_sheet + ". " + view.printed + " printed, " +
      view.placed + " of " + view.cells + " cells filled.";
    root.dataset.waiting = String(view.waiting);
    body.replaceChildren();
    view.sheets.forEach(function (s) {
      const tr = document.createElement("tr");
      const number = document.createElement("td");
      number.textContent = String(s.number);
      const when = document.createElement("td");
      when.textContent = new Date(s.taken_at).toLocaleTimeString();
      const cells = document.createElement("td");
      cells.textContent = s.cells.length ? s.cells.map(cellWords).join("; ") : "…";
      const again = document.createElement("td");
      const a = document.createElement("a");
      a.href = s.pdf_url;
      a.target = "_blank";
      a.rel = "noopener";
      a.textContent = "Print sheet " + s.number + " again";
      const keep = document.createElement("a");
      keep.href = s.keepsakes_url;
      keep.target = "_blank";
      keep.rel = "noopener";
      keep.className = "keepsakes";
      keep.textContent = "Keepsakes of sheet " + s.number;
      again.append(a, " · ", keep);
      tr.append(number, when, cells, again);
      body.append(tr);
    });
  }

  async function refresh() {
    try {
      const response = await fetch(api + query(), { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return null;
      const view = await response.json();
      showSheets(view);
      return view;
    } catch (e) {
      return null;
    }
  }

  // Takes the next sheet: `full` only when enough stickers wait to fill one.
  async function takeSheet(full) {
    if (taking) return;
    taking = true;
    take.disabled = true;
    try {
      const response = await fetch(api + query(full ? { full: "true" } : {}), {
        method: "POST",
        headers: { "X-Requested-With": "tessera" },
        credentials: "same-origin",
      });
      if (response.status === 204) {
        if (!full) status.textContent = "No sticker waits to be printed.";
        return;
      }
      if (!response.ok) {
        let message = "the server answered " + response.status;
        try { const b = await response.json(); message = (b.error && b.error.message) || message; } catch (e) { /* not JSON */ }
        status.textContent = "No sheet: " + message + ".";
        return;
      }
      const number = response.headers.get("Tessera-Sheet");
      const url = URL.createObjectURL(await response.blob());
      const frame = document.getElementById("sheet-frame");
      frame.src = url;
      frame.hidden = false;
      const link = document.getElementById("sheet-link");
      link.href = url;
      link.textContent = "Open sheet " + number + " to print";
      document.getElementById("sheet-line").hidden = false;
      document.getElementById("sheet-none").hidden = true;
      root.dataset.sheet = number;
      status.textContent = "Sheet " + number + " is ready to print.";
    } finally {
      taking = false;
      take.disabled = false;
      await refresh();
    }
  }

  take.addEventListener("click", function () { takeSheet(false); });
  paper.addEventListener("change", refresh);

  async function tick() {
    const view = await refresh();
    if (view && auto.checked && view.waiting >= view.per_sheet) await takeSheet(true);
  }
  tick();
  setInterval(tick, 5000);
})();
