"use strict";
// An event's page, to its owner: photos put in, left out or taken out, one or many at once,
// through the API; a new mosaic asked for.
(function () {
  document.querySelectorAll(".swatch[data-color]").forEach(function (s) {
    s.style.backgroundColor = s.dataset.color;
  });
  const root = document.getElementById("event");
  const api = "/api/v1/events/" + root.dataset.event;
  const actStatus = document.getElementById("act-status");

  document.querySelectorAll(".select-all").forEach(function (box) {
    box.addEventListener("change", function () {
      document.querySelectorAll('.event-photos[data-group="' + box.dataset.group + '"] .pick')
        .forEach(function (pick) { pick.checked = box.checked; });
    });
  });

  async function messageOf(response) {
    const body = await response.json().catch(function () { return {}; });
    return (body.error && body.error.message) || "status " + response.status;
  }

  document.querySelectorAll("[data-act]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const picked = Array.from(document.querySelectorAll(".pick:checked")).map(function (p) { return p.value; });
      if (!picked.length) {
        actStatus.textContent = "Select one or more photos first.";
        return;
      }
      const act = button.dataset.act;
      let done = 0;
      for (const id of picked) {
        actStatus.textContent = "Working: " + done + " of " + picked.length + "…";
        const response = act === "delete"
          ? await fetch(api + "/photos/" + id, { method: "DELETE", credentials: "same-origin" })
          : await fetch(api + "/photos/" + id, {
            method: "PATCH",
            credentials: "same-origin",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ state: act }),
          });
        if (!response.ok) {
          actStatus.textContent = "Stopped after " + done + ": " + (await messageOf(response)) + ".";
          return;
        }
        done += 1;
      }
      location.reload();
    });
  });

  const make = document.getElementById("make");
  const makeStatus = document.getElementById("make-status");
  make.addEventListener("click", async function () {
    make.disabled = true;
    makeStatus.textContent = "Asking for a new mosaic…";
    const response = await fetch(api + "/mosaic", { method: "POST", credentials: "same-origin" });
    if (!response.ok) {
      makeStatus.textContent = "Not made: " + (await messageOf(response)) + ".";
      make.disabled = false;
      return;
    }
    const body = await response.json();
    makeStatus.replaceChildren("Under way: ");
    const a = document.createElement("a");
    a.href = "/jobs/" + body.job;
    a.textContent = "follow it";
    makeStatus.append(a, ".");
    make.disabled = false;
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
      }),
    });
    status.textContent = response.ok ? "Saved." : "Not saved: " + (await messageOf(response)) + ".";
  });
  root.dataset.ready = "true";
})();
