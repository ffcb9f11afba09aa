"use strict";
// A link to hand on: each element with data-share (the link, or its own text) gets a Copy
// button, and a Share button where the device has a share sheet (phones).
(function () {
  function enhance(el) {
    if (el.dataset.shareReady) return;
    el.dataset.shareReady = "true";
    const link = function () { return el.dataset.share || el.textContent.trim(); };
    const bar = document.createElement("span");
    bar.className = "share-buttons";
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy-link";
    copy.textContent = "Copy link";
    copy.addEventListener("click", async function () {
      try {
        await navigator.clipboard.writeText(link());
        copy.textContent = "Copied";
      } catch (e) {
        // Without the clipboard (an insecure page), the link is selected to copy by hand.
        const range = document.createRange();
        range.selectNodeContents(el);
        const selection = getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        copy.textContent = "Selected: copy it";
      }
      setTimeout(function () { copy.textContent = "Copy link"; }, 2500);
    });
    bar.append(copy);
    if (navigator.share) {
      const share = document.createElement("button");
      share.type = "button";
      share.className = "share-link";
      share.textContent = "Share…";
      share.addEventListener("click", function () {
        navigator.share({ title: document.title, url: link() }).catch(function () {});
      });
      bar.append(share);
    }
    el.after(bar);
  }
  function scan() { document.querySelectorAll("[data-share]").forEach(enhance); }
  window.tesseraShare = scan;
  scan();
})();
