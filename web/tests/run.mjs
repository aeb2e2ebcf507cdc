// `npm test`: bundles tests/*.test.ts with esbuild into a temporary folder and runs them with node --test.
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const web = dirname(dirname(fileURLToPath(import.meta.url)));
// Inside node_modules (ignored by git) so that the bundles resolve playwright-core from web/node_modules.
const cache = join(web, "node_modules", ".cache");
mkdirSync(cache, { recursive: true });
const out = mkdtempSync(join(cache, "kairos-view-tests-"));
const tests = readdirSync(join(web, "tests")).filter(f => f.endsWith(".test.ts"));
try {
  await build({
    entryPoints: tests.map(f => join(web, "tests", f)),
    outdir: out,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: "inline",
    logLevel: "warning",
  });
  const files = readdirSync(out).filter(f => f.endsWith(".mjs")).map(f => join(out, f));
  const r = spawnSync(process.execPath, ["--enable-source-maps", "--test", "--test-concurrency=1", ...process.argv.slice(2), ...files], { stdio: "inherit" });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
