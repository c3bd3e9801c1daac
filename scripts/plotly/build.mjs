// Bundles entry.js into one minified script, as plotly.js bundles its own dist files
// (its esbuild-config.js: iife, global Plotly, regl and stream aliases, es2016), with the
// plotly.js license header first and the bundled packages' license comments at the end.
// Usage: node build.mjs OUTFILE (from a directory where `npm ci` installed package-lock.json).
import { readFileSync } from "node:fs";
import { build } from "esbuild";

const out = process.argv[2];
const plotly = JSON.parse(readFileSync("node_modules/plotly.js/package.json", "utf8"));
const esbuild = JSON.parse(readFileSync("node_modules/esbuild/package.json", "utf8"));
// the copyright line of plotly.js's own bundles, as they have it
const copyright = readFileSync("node_modules/plotly.js/dist/plotly.js", "utf8").slice(0, 2000)
  .match(/Copyright [^\n]*/)[0];
const traces = [...readFileSync("entry.js", "utf8").matchAll(/plotly\.js\/lib\/(\w+)"/g)]
  .map((m) => m[1]).filter((name) => name !== "core");

const header = `/**
* plotly.js v${plotly.version}, a partial bundle for Floe: the core (scatter) and the traces
* ${traces.join(", ")}; built with esbuild ${esbuild.version} by scripts/build-plotly.sh
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
  legalComments: "eof",
  banner: { js: header },
  logLevel: "warning",
});
