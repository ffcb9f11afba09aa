"use strict";
// My jobs: cancel a running job, delete an ended one (with its mosaic), through the JSON API.
(function () {
  const table = document.getElementById("jobs");
  const status = document.getElementById("jobs-status");
  if (!table) return;

  table.addEventListener("click", async function (ev) {
    const button = ev.target.closest("button[data-action]");
    if (!button) return;
    const row = button.closest("tr");
    const id = row.dataset.job;
    const action = button.dataset.action;
    if (action === "delete" && !window.confirm("Delete this job and its mosaic? This cannot be undone.")) return;
    button.disabled = true;
    status.hidden = true;
    const url = "/api/v1/jobs/" + encodeURIComponent(id) + (action === "cancel" ? "/cancel" : "");
    let response;
    try {
      response = await fetch(url, {
        method: action === "cancel" ? "POST" : "DELETE",
        credentials: "same-origin",
        headers: { "X-Requested-With": "tessera" },
      });
    } catch (e) {
      status.textContent = "The server could not be reached; nothing was changed.";
      status.hidden = false;
      button.disabled = false;
      return;
    }
    if (response.ok || response.status === 404) {
      if (action === "delete") {
        row.remove();
        if (!table.tBodies[0].rows.length) window.location.reload();
      } else {
        window.location.reload();
      }
      return;
    }
    let message = "The server answered " + response.status + ".";
    try {
      const body = await response.json();
      if (body.error.code === "job_active") message = "The job is still running: cancel it first, or wait until it ends.";
      else if (body.error.code === "job_ended") message = "The job has already ended.";
      else if (body.error.code === "not_your_job") message = "Only the browser that submitted a job may change it.";
      else message = body.error.message;
    } catch (e) {
      // Keep the status line.
    }
    status.textContent = message;
    status.hidden = false;
    button.disabled = false;
  });
})();
