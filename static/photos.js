"use strict";
// Photos as the pages send them: reduced in the browser first, so that a phone's 12-megapixel
// photos leave it at a tenth of their size. Used by the libraries page and the contribute page.
window.TesseraPhotos = (function () {
  // Photos leave the browser reduced to this long side: tiles are cut from far less (64 px by
  // default), with room for any shape's crop. HEIC and other files the browser cannot draw,
  // and files with transparency (PNG, WebP, GIF), go as they are.
  const KEEP_SIDE = 1024;
  async function reduced(file) {
    if (!(file.type === "image/jpeg" || /\.jpe?g$/i.test(file.name)) || !window.createImageBitmap) {
      return file;
    }
    let bitmap;
    try {
      bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
    } catch (e) {
      return file;
    }
    const scale = KEEP_SIDE / Math.max(bitmap.width, bitmap.height);
    if (scale >= 1) {
      bitmap.close();
      return file;
    }
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(bitmap.width * scale));
    canvas.height = Math.max(1, Math.round(bitmap.height * scale));
    const context = canvas.getContext("2d");
    context.imageSmoothingQuality = "high";
    context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    bitmap.close();
    const blob = await new Promise(function (r) { canvas.toBlob(r, "image/jpeg", 0.9); });
    return blob && blob.size < file.size ? new File([blob], file.name, { type: "image/jpeg" }) : file;
  }
  return { reduced: reduced, KEEP_SIDE: KEEP_SIDE };
})();
