// Browser tests of the kairos view page against the real server (KAIROS_BIN) and real results.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import {
  BIN, SLOW, T, apiFromPage, getBrowser, need, noErrors, openPage, parseCount, screenshot, serve, waitReady, withCommas, type Server,
} from "./harness";

const env = process.env;

async function viewRange(page: Page): Promise<[number, number]> {
  const c = page.locator("#timeline");
  return [Number(await c.getAttribute("data-from")), Number(await c.getAttribute("data-to"))];
}

/** Clicks or drags on the timeline's plot area at fractions of its width, in the first lane. */
async function plotPoint(page: Page, fx: number, lane = 0): Promise<{ x: number; y: number }> {
  const box = (await page.locator("#timeline").boundingBox())!;
  const labelW = 180;
  return { x: box.x + labelW + (box.width - labelW) * fx, y: box.y + 10 + lane * 20 };
}

async function summarySamples(page: Page): Promise<number> {
  const row = page.locator("#summary table.facts tr", { has: page.locator("th", { hasText: /^Samples$/ }) });
  return parseCount(await row.locator("td").first().innerText());
}


describe("result A (hotspots, several threads)", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_A) srv = await serve(env.KAIROS_RESULT_A); });
  after(async () => { await srv?.stop(); });

  it("opens: summary facts, timeline lanes, trees", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    await assert.doesNotReject(page.locator("#summary table.facts").waitFor());
    assert.match(await page.locator("#summary").innerText(), /Samples/);
    assert.ok(await summarySamples(page) > 0, "Samples > 0");
    assert.ok(await page.locator("#summary table.top tbody tr").count() >= 1, "top functions listed");
    const lanes = Number(await page.locator("#timeline").getAttribute("data-lanes"));
    assert.ok(lanes >= 1, `lanes: ${lanes}`);
    assert.match(await page.locator("#lanes").innerText(), /^\d+ thread lanes?$/);
    assert.equal(await page.locator(".error").count(), 0, "no error shown");
    assert.ok(Number(await page.locator("#tree").getAttribute("data-rows")) > 0, "tree rows");
    await screenshot(page, "result-a");
    // lanes per CPU
    await page.selectOption("#lane-mode", "cpu");
    await waitReady(page);
    assert.match(await page.locator("#lanes").innerText(), /^\d+ CPU lanes?$/);
    assert.ok(Number(await page.locator("#timeline").getAttribute("data-lanes")) >= 1);
    noErrors(errors);
    await page.close();
  });

  it("zooms with the wheel and buttons, pans with the keyboard", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const [f0, t0] = await viewRange(page);
    assert.ok(t0 > f0, "a visible range");
    const p = await plotPoint(page, 0.5);
    await page.mouse.move(p.x, p.y);
    const req = page.waitForRequest(r => {
      const u = new URL(r.url());
      if (!u.pathname.endsWith("/api/timeline")) return false;
      const from = Number(u.searchParams.get("from") ?? 0), to = Number(u.searchParams.get("to") ?? Infinity);
      return to - from < t0 - f0;
    });
    await page.mouse.wheel(0, -400);
    const r = await req;
    await waitReady(page);
    const [f1, t1] = await viewRange(page);
    assert.ok(t1 - f1 < t0 - f0, `zoomed in: ${f1}..${t1} within ${f0}..${t0}`);
    assert.ok(f1 >= f0 && t1 <= t0);
    const u = new URL(r.url());
    assert.equal(Number(u.searchParams.get("width")) > 0, true, "width sent");
    // buttons
    await page.click("#zoom-in");
    await waitReady(page);
    const [f2, t2] = await viewRange(page);
    assert.ok(Math.abs((t2 - f2) - (t1 - f1) / 2) <= 2, `+ halves the range: ${t2 - f2} vs ${t1 - f1}`);
    // keyboard pan to the right
    await page.focus("#timeline");
    await page.keyboard.press("ArrowRight");
    await waitReady(page);
    const [f3, t3] = await viewRange(page);
    assert.ok(f3 > f2 || t2 >= t0, `panned right: ${f2} -> ${f3}`);
    assert.ok(Math.abs((t3 - f3) - (t2 - f2)) <= 2, "pan keeps the span");
    // shift+drag pans too
    const a = await plotPoint(page, 0.6), b = await plotPoint(page, 0.4);
    await page.keyboard.down("Shift");
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move(b.x, b.y, { steps: 5 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    await waitReady(page);
    const [f4] = await viewRange(page);
    assert.ok(f4 > f3 || t3 >= t0, `shift+drag panned right: ${f3} -> ${f4}`);
    assert.match(await page.locator("#selection").innerText(), /whole result/, "shift+drag does not select");
    await page.click("#zoom-reset");
    await waitReady(page);
    assert.deepEqual(await viewRange(page), [f0, t0]);
    noErrors(errors);
    await page.close();
  });

  it("selects a time range by dragging; summary and trees follow it", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const total = await summarySamples(page);
    const ranged = (path: string) => page.waitForRequest(r => {
      const u = new URL(r.url());
      return u.pathname.endsWith(path) && u.searchParams.has("from") && u.searchParams.has("to");
    });
    const sumReq = ranged("/api/summary"), treeReq = ranged("/api/tree");
    const a = await plotPoint(page, 0.3), b = await plotPoint(page, 0.6);
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move(b.x, b.y, { steps: 8 });
    await page.mouse.up();
    const [sr] = await Promise.all([sumReq, treeReq]);
    await waitReady(page);
    const text = await page.locator("#selection").innerText();
    assert.match(text, /^selection: [\d.]+ (ns|µs|ms|s) – [\d.]+ (ns|µs|ms|s)/);
    const from = Number(new URL(sr.url()).searchParams.get("from")), to = Number(new URL(sr.url()).searchParams.get("to"));
    const [vf, vt] = await viewRange(page);
    const span = vt - vf;
    assert.ok(Math.abs(from - (vf + 0.3 * span)) < span * 0.02 && Math.abs(to - (vf + 0.6 * span)) < span * 0.02,
      `selection ${from}..${to} matches the drag over ${vf}..${vt}`);
    const part = await summarySamples(page);
    assert.ok(part <= total, `selected samples ${part} <= total ${total}`);
    assert.match(await page.locator("#summary h2").innerText(), /Summary of/);
    await screenshot(page, "selection");
    const cleared = page.waitForRequest(r => new URL(r.url()).pathname.endsWith("/api/summary") && !new URL(r.url()).searchParams.has("from"));
    await page.click("#clear-selection");
    await cleared;
    await waitReady(page);
    assert.match(await page.locator("#selection").innerText(), /whole result/);
    assert.equal(await summarySamples(page), total);
    noErrors(errors);
    await page.close();
  });

  it("shows top-down and bottom-up trees and expands rows", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const rows = async (): Promise<number> => Number(await page.locator("#tree").getAttribute("data-rows"));
    assert.ok(await rows() > 0, "bottom-up rows");
    assert.ok(await page.locator("#tree .vt-row").count() > 0);
    const td = page.waitForRequest(r => r.url().includes("/api/tree") && r.url().includes("kind=top-down"));
    await page.click("#tree-top-down");
    await td;
    await waitReady(page);
    const top = await rows();
    assert.ok(top > 0, "top-down rows");
    const twisty = page.locator("#tree .vt-row .twisty", { hasText: "▸" }).first();
    await twisty.waitFor();
    const name = await page.locator("#tree .vt-row", { has: page.locator(".twisty", { hasText: "▸" }) }).first().locator(".label").innerText();
    const exp = page.waitForRequest(r => /[?&]path=\d/.test(r.url()) && r.url().includes("/api/tree"));
    await twisty.click();
    await exp;
    await waitReady(page);
    assert.ok(await rows() > top, `expanding ${name} adds rows`);
    assert.ok(await page.locator("#tree .vt-row .twisty", { hasText: "▾" }).count() >= 1, "an open row");
    // the same node, collapsed again
    await page.locator("#tree .vt-row .twisty", { hasText: "▾" }).first().click();
    await waitReady(page);
    assert.equal(await rows(), top);
    // sorted by self, largest first, by clicking its heading
    await page.locator("#tree .vt-head .vt-cell", { hasText: /^Self/ }).click();
    const selfs = (await page.locator("#tree .vt-row").evaluateAll(rs => rs
      .sort((a, b) => Number((a as HTMLElement).dataset.index) - Number((b as HTMLElement).dataset.index))
      .map(r => (r.children[2] as HTMLElement).dataset.value ?? ""))).map(Number);
    assert.ok(selfs.length > 1 && selfs.every((v, i) => i === 0 || selfs[i - 1]! >= v), `self descending: ${selfs.join(" ")}`);
    assert.match(await page.locator("#tree .vt-head .vt-cell", { hasText: /^Self/ }).innerText(), /▼/);
    // another grouping
    const g = page.waitForRequest(r => r.url().includes("/api/tree") && r.url().includes("group=thread"));
    await page.selectOption("#group", "thread");
    await g;
    await waitReady(page);
    assert.ok(await rows() >= 1);
    await screenshot(page, "trees");
    noErrors(errors);
    await page.close();
  });

  it("filters to one thread by its lane label; the URL keeps the view", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const lanes = Number(await page.locator("#timeline").getAttribute("data-lanes"));
    const results = await apiFromPage<{ results: { threads: { tid: number }[] }[] }>(page, "results");
    const tids = results.results[0]!.threads.map(th => th.tid);
    const box = (await page.locator("#timeline").boundingBox())!;
    const req = page.waitForRequest(r => r.url().includes("/api/summary") && new URL(r.url()).searchParams.has("tids"));
    await page.mouse.click(box.x + 40, box.y + 10);
    const tid = Number(new URL((await req).url()).searchParams.get("tids"));
    assert.ok(tids.includes(tid), `tids=${tid} is a thread of the result`);
    await waitReady(page);
    assert.match(await page.locator("#threads-filter").innerText(), new RegExp(`\\(${tid}\\)`));
    assert.equal(Number(await page.locator("#timeline").getAttribute("data-lanes")), 1, "one lane left");
    // zoom and select, then reload: the fragment brings it all back
    await page.click("#zoom-in");
    await waitReady(page);
    const a = await plotPoint(page, 0.2), b = await plotPoint(page, 0.5);
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move(b.x, b.y, { steps: 4 });
    await page.mouse.up();
    await waitReady(page, 400);
    const range = await viewRange(page);
    const sel = await page.locator("#selection").innerText();
    await page.waitForFunction(() => location.hash.includes("sel=") && location.hash.includes("view=") && location.hash.includes("tids="));
    await page.reload();
    await waitReady(page);
    assert.deepEqual(await viewRange(page), range);
    assert.equal(await page.locator("#selection").innerText(), sel);
    assert.match(await page.locator("#threads-filter").innerText(), new RegExp(`\\(${tid}\\)`));
    await page.click("#clear-threads");
    await waitReady(page);
    assert.equal(Number(await page.locator("#timeline").getAttribute("data-lanes")), lanes);
    noErrors(errors);
    await page.close();
  });

  it("shows the server's error sentence when a request fails", T, async t => {
    if (!need(t, "KAIROS_RESULT_A")) return;
    const page = await openPage(await getBrowser(), srv!.url);
    await page.route("**/api/summary*", route => route.fulfill({
      status: 500, contentType: "application/json", body: JSON.stringify({ error: "The summary failed on purpose; try again." }),
    }));
    await page.click("#zoom-in");
    const a = await plotPoint(page, 0.2), b = await plotPoint(page, 0.4);
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move(b.x, b.y, { steps: 4 });
    await page.mouse.up();
    await waitReady(page);
    const err = page.locator("#summary .error");
    assert.equal(await err.innerText(), "The summary failed on purpose; try again.");
    assert.ok(await err.isVisible());
    await page.close();
  });
});

describe("branch records", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_BRANCHES) srv = await serve(env.KAIROS_RESULT_BRANCHES); });
  after(async () => { await srv?.stop(); });

  it("inspects a sample: stack, branch records, one or two methods", T, async t => {
    if (!need(t, "KAIROS_RESULT_BRANCHES")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const methods = await page.locator("#method option").evaluateAll(os => os.map(o => (o as HTMLOptionElement).value));
    const timed = methods.filter(m => m !== "none");
    assert.ok(timed.length >= 2, `several methods: ${methods.join(",")}`);
    const p = await plotPoint(page, 0.5);
    const sreq = page.waitForResponse(r => r.url().includes("/api/sample"));
    await page.mouse.click(p.x, p.y);
    const sres = await sreq;
    assert.equal(sres.status(), 200, await sres.text());
    await waitReady(page);
    const rows = page.locator("#branches tbody tr");
    assert.ok(await rows.count() >= 1, "branch records listed");
    assert.ok((await rows.first().locator("td.name").first().innerText()).trim().length > 0, "a from function");
    assert.ok(await page.locator("#inspector table.stack tbody tr").count() >= 1, "a stack");
    const order = await rows.evaluateAll(trs => trs.map(tr => Number(tr.children[0]!.textContent)));
    assert.deepEqual(order, [...order].sort((x, y) => x - y), "oldest first");
    const heads = async (): Promise<string[]> => page.locator("#branches th.time").evaluateAll(ths => ths.map(th => th.getAttribute("data-method") ?? ""));
    const h0 = await heads();
    assert.equal(h0.length, 1);
    // switch the header's method: the time column follows it
    const other = timed.find(m => m !== h0[0])!;
    const mreq = page.waitForResponse(r => r.url().includes("/api/sample") && new URL(r.url()).searchParams.get("methods") === other);
    await page.selectOption("#method", other);
    const mres = await mreq;
    await waitReady(page);
    assert.deepEqual(await heads(), [other]);
    const answer = await mres.json() as { branches: { times: (number | null)[] }[] };
    const titles = await page.locator("#branches tbody td.time").evaluateAll(tds => tds.map(td => td.getAttribute("title") ?? ""));
    assert.deepEqual(titles, answer.branches.map(b => (b.times[0] === null ? "" : withCommas(b.times[0]!) + " ns")), "times of the new method");
    // a second method next to it
    const third = timed.find(m => m !== other)!;
    const m2 = page.waitForRequest(r => r.url().includes("/api/sample") && new URL(r.url()).searchParams.get("methods") === `${other},${third}`);
    const tl2 = page.waitForResponse(r => r.url().includes("/api/timeline") && new URL(r.url()).searchParams.get("method") === third);
    await page.selectOption("#method2", third);
    await m2;
    const tl2res = await tl2;
    await waitReady(page);
    assert.deepEqual(await heads(), [other, third]);
    assert.equal(await rows.first().locator("td.time").count(), 2, "two time columns");
    // and the timeline shows every lane under both methods, one above the other (figure 12)
    const tc = page.locator("#timeline");
    const lanes = Number(await tc.getAttribute("data-lanes"));
    assert.ok(lanes >= 1);
    assert.equal(Number(await tc.getAttribute("data-rows")), 2 * lanes, "two rows per lane");
    assert.equal(await tc.getAttribute("data-methods"), `${other},${third}`);
    const second = await tl2res.json() as { lanes: { count: number[] }[] };
    assert.ok(second.lanes.some(l => l.count.length > 0), "the second method's lanes have points");
    await screenshot(page, "branches");
    noErrors(errors);
    await page.close();
  });
});

describe("a wide result (100,000 functions)", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_WIDE) srv = await serve(env.KAIROS_RESULT_WIDE); });
  after(async () => { await srv?.stop(); });

  it("keeps the tree virtual: few DOM rows, scrolls to the last row", T, async t => {
    if (!need(t, "KAIROS_RESULT_WIDE")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const api = await apiFromPage<{ rows: { name: string[] } }>(page, "tree?r=0&kind=bottom-up&group=function");
    const n = api.rows.name.length;
    assert.ok(n >= 100_000, `bottom-up rows from the API: ${n}`);
    assert.equal(Number(await page.locator("#tree").getAttribute("data-rows")), n);
    const dom = await page.locator("#tree .vt-row").count();
    assert.ok(dom > 0 && dom < 200, `DOM rows: ${dom}`);
    await page.locator("#tree .vt-scroll").evaluate(el => { el.scrollTop = el.scrollHeight; });
    const last = api.rows.name[n - 1]!;
    await page.locator("#tree .vt-row .label", { hasText: last }).first().waitFor({ timeout: 10_000 });
    assert.ok(await page.locator("#tree .vt-row").count() < 200);
    // grouped by module: one node (the module) whose 100,000 children open quickly
    await page.selectOption("#group", "module");
    await waitReady(page);
    const before = Number(await page.locator("#tree").getAttribute("data-rows"));
    const twisty = page.locator("#tree .vt-row .twisty", { hasText: "▸" }).first();
    const t0 = Date.now();
    await twisty.click();
    await page.waitForFunction(b => Number(document.getElementById("tree")!.dataset.rows) >= b + 100_000, before, { timeout: SLOW });
    const ms = Date.now() - t0;
    assert.ok(ms < 20_000, `expanding took ${ms} ms`);
    assert.ok(await page.locator("#tree .vt-row").count() < 200, "still few DOM rows");
    await screenshot(page, "wide");
    noErrors(errors);
    await page.close();
  });
});

describe("compare two results", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_A && env.KAIROS_RESULT_B) srv = await serve(env.KAIROS_RESULT_A, env.KAIROS_RESULT_B); });
  after(async () => { await srv?.stop(); });

  it("shows facts and rows with ratios", T, async t => {
    if (!need(t, "KAIROS_RESULT_A", "KAIROS_RESULT_B")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    assert.equal(await page.locator("#result option").count(), 2);
    assert.ok(await page.locator("#tab-compare").isVisible(), "a Compare tab");
    const res = page.waitForResponse(r => r.url().includes("/api/compare"));
    await page.click("#tab-compare");
    assert.equal((await res).status(), 200);
    await waitReady(page);
    assert.ok(await page.locator("#compare").isVisible());
    assert.ok(!(await page.locator("#result-view").isVisible()));
    assert.ok(await page.locator("#compare-facts tbody tr").count() >= 1, "facts");
    assert.ok(Number(await page.locator("#compare").getAttribute("data-rows")) >= 1);
    const ratios = await page.locator("#compare .vt-row .ratio").allInnerTexts();
    assert.ok(ratios.length >= 1 && ratios.every(r => /^[\d.]+×$|^—$/.test(r)), `ratios: ${ratios.slice(0, 5).join(" ")}`);
    const g = page.waitForRequest(r => r.url().includes("/api/compare") && r.url().includes("group=module"));
    await page.selectOption("#compare-group", "module");
    await g;
    await waitReady(page);
    assert.ok(await page.locator("#compare .vt-row").count() >= 1);
    await screenshot(page, "compare");
    await page.click("#tab-result");
    assert.ok(await page.locator("#timeline").isVisible());
    noErrors(errors);
    await page.close();
  });
});

describe("counters", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_COUNTERS) srv = await serve(env.KAIROS_RESULT_COUNTERS); });
  after(async () => { await srv?.stop(); });

  it("draws a chart per series and histogram", T, async t => {
    if (!need(t, "KAIROS_RESULT_COUNTERS")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    assert.ok(await page.locator("#counters").isVisible(), "#counters shown");
    const charts = page.locator("#counters canvas.counter-chart");
    assert.ok(await charts.count() >= 1, "counter canvases");
    const inked = await charts.evaluateAll(cs => cs.map(c => {
      const cv = c as HTMLCanvasElement;
      const data = cv.getContext("2d")!.getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
      return n;
    }));
    assert.ok(inked.every(n => n > 100), `every chart has ink: ${inked.join(",")}`);
    await screenshot(page, "counters");
    noErrors(errors);
    await page.close();
  });
});

describe("a result of another analysis", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_MEMORY) srv = await serve(env.KAIROS_RESULT_MEMORY); });
  after(async () => { await srv?.stop(); });

  it("shows only the views its analysis declares", T, async t => {
    if (!need(t, "KAIROS_RESULT_MEMORY")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const res = await apiFromPage(page, "results") as { results: { kind: string; views: string[] }[] };
    assert.equal(res.results[0]!.kind, "memory-consumption");
    assert.deepEqual(res.results[0]!.views, ["summary"]);
    assert.ok(await page.locator("#summary").isVisible(), "the summary is shown");
    for (const id of ["#timeline-section", "#inspector", "#tree-section"]) {
      assert.ok(!(await page.locator(id).isVisible()), `${id} is hidden: a memory-consumption result has no samples to draw`);
    }
    await screenshot(page, "memory-result");
    noErrors(errors);
    await page.close();
  });
});

describe("a damaged result", () => {
  let srv: Server | null = null;
  let dir = "";
  before(async () => {
    if (!BIN) return;
    dir = mkdtempSync(join(tmpdir(), "kairos-view-bad-"));
    writeFileSync(join(dir, "manifest.json"), "{ this is not json \u0000\u0001");
    srv = await serve(dir);
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("shows the error sentence, not a blank page", T, async t => {
    if (!need(t)) return;
    const page = await openPage(await getBrowser(), srv!.url);
    const err = page.locator(".error").first();
    await err.waitFor({ state: "visible" });
    const text = await err.innerText();
    assert.ok(text.length > 15 && /\w+ \w+/.test(text), `a sentence: ${text}`);
    await screenshot(page, "damaged");
    await page.close();
  });
});
