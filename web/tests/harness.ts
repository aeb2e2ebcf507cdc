// Test helpers: spawn `kairos view` and read its URL, launch Chromium, wait for the page to be ready.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { after, type TestContext } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";

export const BIN = process.env.KAIROS_BIN ?? "";
export const ARTIFACTS = process.env.KAIROS_ARTIFACTS || join(tmpdir(), "kairos-view-artifacts");
export const SLOW = 120_000;
/** Options of a test that drives the page: a few slow steps. */
export const T = { timeout: 4 * SLOW };

export interface Server { url: string; proc: ChildProcess; stop(): Promise<void>; log(): string }

const running = new Set<ChildProcess>();
// Whatever way the test process ends, no server is left behind.
process.on("exit", () => { for (const p of running) p.kill("SIGKILL"); });

/** Starts `KAIROS_BIN view -r R... --no-browser --port 0` and resolves with the URL it prints. */
export function startServer(results: string[]): Promise<Server> {
  const args = ["view", ...results.flatMap(r => ["-r", r]), "--no-browser", "--port", "0"];
  const proc = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  let out = "", err = "";
  const log = (): string => `$ ${BIN} ${args.join(" ")}\nstdout: ${out}\nstderr: ${err}`;
  const stop = (): Promise<void> => new Promise(resolve => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => { proc.kill("SIGKILL"); }, 5000);
    proc.once("exit", () => { clearTimeout(timer); resolve(); });
    proc.kill("SIGTERM");
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { void stop(); reject(new Error("kairos view printed no URL within 90 s\n" + log())); }, 90_000);
    proc.stdout!.setEncoding("utf8");
    proc.stderr!.setEncoding("utf8");
    proc.stderr!.on("data", (d: string) => { err += d; });
    proc.stdout!.on("data", (d: string) => {
      out += d;
      const m = /Kairos view: (http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ url: m[1]!, proc, stop, log }); }
    });
    proc.on("error", e => { clearTimeout(timer); reject(new Error(`cannot run ${BIN}: ${e.message}`)); });
    proc.on("exit", code => { clearTimeout(timer); reject(new Error(`kairos view exited with ${code} before printing its URL\n` + log())); });
  });
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.KAIROS_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 90_000,
  });
}

/** Resolves once body[data-state] is "ready" (after a short pause so that just-started work has begun). */
export async function waitReady(page: Page, pause = 120): Promise<void> {
  await page.waitForTimeout(pause);
  await page.waitForFunction(() => document.body.dataset.state === "ready", undefined, { timeout: SLOW, polling: 50 });
}

/** Opens a new page at `url` and waits for it to be ready; page errors are collected in `errors`. */
export async function openPage(browser: Browser, url: string, errors: string[] = []): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(SLOW);
  page.on("pageerror", e => errors.push(String(e)));
  page.on("console", m => { if (m.type() === "error") errors.push("console: " + m.text()); });
  await page.goto(url);
  await waitReady(page);
  return page;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, name + ".png"), fullPage: true });
}

/** GET api/PATH from inside the page (same origin, same token), as JSON. */
export async function apiFromPage<T>(page: Page, path: string): Promise<T> {
  return page.evaluate(async (p: string) => {
    const r = await fetch("api/" + p);
    return r.json();
  }, path) as Promise<T>;
}

/** Parses "12,345" (thousands separators) to a number. */
export function parseCount(s: string): number {
  return Number(s.replace(/[,\s]/g, ""));
}

/** Thousands separators, as the page writes integers. */
export function withCommas(n: number): string {
  const s = Math.round(Math.abs(n)).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (n < 0 ? "-" : "") + s;
}

/** Skips the test (with the reason) when an environment variable it needs is missing. */
export function need(t: TestContext, ...vars: string[]): boolean {
  if (!BIN) { t.skip("KAIROS_BIN is not set: the browser tests need the kairos binary (the Rust harness sets it)"); return false; }
  const missing = vars.filter(v => !process.env[v]);
  if (missing.length) { t.skip(`${missing.join(", ")} not set`); return false; }
  return true;
}

export function noErrors(errors: string[]): void {
  assert.deepEqual(errors, [], "the page reported errors");
}

// One browser and the servers of a test file, closed when the file's tests are done.
let browser: Browser | null = null;
const servers: Server[] = [];

export async function serve(...results: string[]): Promise<Server> {
  const s = await startServer(results);
  servers.push(s);
  return s;
}

export async function getBrowser(): Promise<Browser> {
  browser ??= await launchBrowser();
  return browser;
}

after(async () => {
  await Promise.all(servers.map(s => s.stop()));
  await browser?.close();
});

/** How many pixels of the canvas `sel` are drawn (not transparent): a chart that drew nothing has none. */
export async function inked(page: Page, sel: string): Promise<number> {
  return page.locator(sel).evaluate(cv => {
    const x = cv as HTMLCanvasElement;
    const d = x.getContext("2d")!.getImageData(0, 0, x.width, x.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
    return n;
  });
}
