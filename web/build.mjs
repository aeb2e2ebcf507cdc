// Bundles the page into OUTDIR: app.js (esbuild, iife, minified, es2020), index.html and style.css.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node build.mjs OUTDIR");
  process.exit(2);
}
const outDir = resolve(out);
await mkdir(outDir, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(outDir, "app.js"),
  bundle: true,
  format: "iife",
  minify: true,
  target: "es2020",
  platform: "browser",
  charset: "utf8",
  legalComments: "none",
  logLevel: "warning",
});
await copyFile(join(here, "index.html"), join(outDir, "index.html"));
await copyFile(join(here, "style.css"), join(outDir, "style.css"));
