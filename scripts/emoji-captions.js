// Prints captions.csv for a folder of emoji images from emoji-datasource's emoji.json: each
// image's Unicode name in sentence case ("Grinning face"), skin-tone variants marked as such.
// usage: node scripts/emoji-captions.js EMOJI_JSON FOLDER > FOLDER/captions.csv
"use strict";
const fs = require("fs");
const [json, folder] = process.argv.slice(2);
const present = new Set(fs.readdirSync(folder));
const sentence = (name) => name.charAt(0) + name.slice(1).toLowerCase();
const field = (text) => (/[",\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text);
const lines = [];
for (const emoji of JSON.parse(fs.readFileSync(json, "utf8"))) {
  const name = sentence(emoji.name || (emoji.short_name || "").replace(/_/g, " "));
  if (!name) continue;
  if (present.has(emoji.image)) lines.push(emoji.image + "," + field(name));
  for (const variant of Object.values(emoji.skin_variations || {})) {
    if (present.has(variant.image)) lines.push(variant.image + "," + field(name + ", skin tone"));
  }
}
process.stdout.write(lines.join("\n") + "\n");
