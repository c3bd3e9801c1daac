// Bundles entry.js into one minified script, as plotly.js bundles its own dist files
// (its esbuild-config.js: iife, global Plotly, regl and stream aliases, es2016; the
// attributes' documentation left out, as its dist bundles do), with the plotly.js license
// header first and the bundled packages' license comments at the end.
// Usage: node build.mjs OUTFILE (from a directory where `npm ci` installed package-lock.json).
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { build } from "esbuild";

const out = process.argv[2];
const plotly = JSON.parse(readFileSync("node_modules/plotly.js/package.json", "utf8"));
const esbuild = JSON.parse(readFileSync("node_modules/esbuild/package.json", "utf8"));
// the copyright line of plotly.js's own bundles, as they have it
const copyright = readFileSync("node_modules/plotly.js/dist/plotly.js", "utf8").slice(0, 2000)
  .match(/Copyright [^\n]*/)[0];
const traces = [...readFileSync("entry.js", "utf8").matchAll(/plotly\.js\/lib\/(\w+)"/g)]
  .map((m) => m[1]).filter((name) => name !== "core");

// plotly.js documents every attribute in its source (`description: "..."` or
// `description: ["...", "..."].join(" ")`), for its schema and reference pages; drawing never
// reads it. Its own dist bundles strip these (a tenth of the code); so do we, for the
// description values that are plain string literals or joins of them (the others stay).
const DESCRIPTION = /(^|[{,\s])description\s*:\s*/g;

function skipSpace(src, i) {
  for (;;) {
    while (i < src.length && /\s/.test(src[i])) i++;
    if (src.startsWith("//", i)) i = src.includes("\n", i) ? src.indexOf("\n", i) : src.length;
    else if (src.startsWith("/*", i)) i = src.includes("*/", i) ? src.indexOf("*/", i) + 2 : src.length;
    else return i;
  }
}

function stringEnd(src, i) {  // src[i] is a quote; the index after its closing quote, or -1
  for (let j = i + 1; j < src.length && src[j] !== "\n"; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === src[i]) return j + 1;
  }
  return -1;
}

function literalEnd(src, i) {  // "..." or ["...", ...].join("..."): the index after it, or -1
  if (src[i] === "'" || src[i] === '"') return stringEnd(src, i);
  if (src[i] !== "[") return -1;
  for (i = skipSpace(src, i + 1); src[i] !== "]";) {
    if (src[i] !== "'" && src[i] !== '"') return -1;
    if ((i = stringEnd(src, i)) < 0) return -1;
    i = skipSpace(src, i);
    if (src[i] === ",") i = skipSpace(src, i + 1);
    else if (src[i] !== "]") return -1;
  }
  i = skipSpace(src, i + 1);
  if (!src.startsWith(".join", i)) return -1;
  i = skipSpace(src, i + 5);
  if (src[i] !== "(") return -1;
  i = skipSpace(src, i + 1);
  if (src[i] === "'" || src[i] === '"') {
    if ((i = stringEnd(src, i)) < 0) return -1;
    i = skipSpace(src, i);
  }
  return src[i] === ")" ? i + 1 : -1;
}

function stripDescriptions(src) {
  let out = "", kept = 0;
  DESCRIPTION.lastIndex = 0;
  for (let m; (m = DESCRIPTION.exec(src));) {
    const end = literalEnd(src, m.index + m[0].length);
    if (end < 0) continue;
    const next = skipSpace(src, end);
    if (src[next] !== "," && src[next] !== "}") continue;  // not a property's whole value
    out += src.slice(kept, m.index + m[1].length);
    kept = src[next] === "," ? next + 1 : end;
    DESCRIPTION.lastIndex = kept;
  }
  return out + src.slice(kept);
}

const stripDocs = {
  name: "strip-plotly-descriptions",
  setup(b) {
    b.onLoad({ filter: /[\\/]plotly\.js[\\/]src[\\/].*\.js$/ }, async ({ path }) => ({
      contents: stripDescriptions(await readFile(path, "utf8")), loader: "js" }));
  },
};

const header = `/**
* plotly.js v${plotly.version}, a partial bundle for Floe: the core (scatter) and the traces
* ${traces.join(", ")}; without the attributes' descriptions;
* built with esbuild ${esbuild.version} by scripts/build-plotly.sh
* from scripts/plotly/ (pinned in its package-lock.json).
* ${copyright}
* All rights reserved.
* Licensed under the MIT license (https://github.com/plotly/plotly.js/blob/master/LICENSE);
* the licenses of the packages bundled with it are at the end of this file.
*/`;

await build({
  entryPoints: ["entry.js"],
  outfile: out,
  bundle: true,
  minify: true,
  format: "iife",
  globalName: "Plotly",
  target: "es2016",
  alias: { regl: "@plotly/regl", stream: "stream-browserify" },
  define: { global: "window", "define.amd": "false", "process.env.NODE_DEBUG": "false" },
  // maplibre's stylesheet is required by the map traces only, which are not bundled
  loader: { ".css": "empty" },
  plugins: [stripDocs],
  legalComments: "eof",
  banner: { js: header },
  logLevel: "warning",
});
