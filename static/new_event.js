"use strict";
// The new event form: the photo, the name and the guests' settings, and the grid the mosaic's
// purpose asks for, sent to the API; then the event's own page.
(function () {
  const form = document.getElementById("event-form");
  const error = document.getElementById("error");
  const status = document.getElementById("status");
  const limit = Number(form.dataset.maxUpload) || 0;
  function fail(message, field) {
    error.textContent = message;
    error.hidden = false;
    form.querySelectorAll("[aria-invalid]").forEach(function (e) { e.removeAttribute("aria-invalid"); });
    const input = field && document.getElementById(field);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }
  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    error.hidden = true;
    const image = document.getElementById("image").files[0];
    const name = document.getElementById("name").value.trim();
    if (!image) return fail("Choose your photo first.", "image");
    if (!name) return fail("Give the event a name.", "name");
    if (limit > 0 && image.size > limit) return fail("This photo is too large: choose a smaller one.", "image");
    const purpose = form.querySelector("input[name=purpose]:checked");
    const data = new FormData();
    data.append("image", image, image.name);
    data.append("name", name);
    data.append("approval", document.getElementById("approval").checked ? "true" : "false");
    data.append("per_guest", document.getElementById("per_guest").value || "0");
    const consent = document.getElementById("consent").value.trim();
    if (consent) data.append("consent", consent);
    data.append("cells", purpose.dataset.cells);
    data.append("tile_size", purpose.dataset.tileSize);
    const button = document.getElementById("make-event");
    button.disabled = true;
    status.textContent = "Making the event…";
    try {
      const response = await fetch("/api/v1/events", {
        method: "POST",
        body: data,
        headers: { "X-Requested-With": "tessera" },
        credentials: "same-origin",
      });
      const body = await response.json().catch(function () { return {}; });
      if (!response.ok) {
        const e = body.error || {};
        return fail((e.message || "The event was not made (" + response.status + ")") + ".", e.field);
      }
      location.assign(body.page_url);
    } catch (e) {
      fail("The event was not made: " + e.message + ".");
    } finally {
      button.disabled = false;
      status.textContent = "";
    }
  });
})();
