// Browser test of the requests view on a latency result of the orders sample (slow requests
// with known causes): the lane under the timeline holds every request and follows its range,
// the histogram's bars hold every request, a brush lists exactly the requests of its duration
// range, a picked slow request zooms the timeline to it and gives the API's cause sentence, and
// the mean slow and normal requests are shown part by part. `api/latency` is the oracle.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Locator, Page } from "playwright-core";
import { BIN, T, apiFromPage, getBrowser, inked, need, noErrors, openPage, screenshot, serve, waitReady, withCommas, type Server } from "./harness";

const env = process.env;
const LABEL_W = 180;

interface Req { id: number; tid: number; start: number; duration: number; slow: boolean; cause: string; parts: Record<string, number> }
interface Answer {
  threshold: number; threshold_how: string; part_keys: string[];
  histogram: { from: number; to: number; count: number }[]; requests: Req[];
}

async function range(page: Page, sel: string): Promise<[number, number]> {
  const c = page.locator(sel);
  return [Number(await c.getAttribute("data-from")), Number(await c.getAttribute("data-to"))];
}

/** Whether histogram bucket `i` holds duration `d`, as the API counts (the first bucket takes what is shorter). */
function inBucket(h: Answer["histogram"], i: number, d: number): boolean {
  return (i === 0 || d >= h[i]!.from) && d < h[i]!.to;
}

/** Where a time is in the lane, on the timeline's mapping (label column, then the plot). */
async function laneX(lane: Locator, t: number): Promise<{ x: number; y: number }> {
  const box = (await lane.boundingBox())!;
  const from = Number(await lane.getAttribute("data-from")), to = Number(await lane.getAttribute("data-to"));
  return { x: box.x + LABEL_W + ((t - from) / (to - from)) * (box.width - LABEL_W), y: box.y + box.height / 2 };
}

/** The view range after a pick: holds the request, not much wider. */
async function zoomedTo(page: Page, q: Req): Promise<void> {
  const [from, to] = await range(page, "#timeline");
  assert.ok(from <= q.start + 1 && to >= q.start + q.duration - 1, `view ${from}..${to} holds request ${q.id} ${q.start}..${q.start + q.duration}`);
  assert.ok(to - from <= 2 * q.duration + 2, `view ${to - from} ns is not much wider than the request's ${q.duration} ns`);
  assert.deepEqual(await range(page, "#requests-lane"), [from, to], "the lane follows the timeline");
}

describe("the requests of a latency result", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_LATENCY) srv = await serve(env.KAIROS_RESULT_LATENCY); });
  after(async () => { await srv?.stop(); });

  it("draws every request in the lane and the histogram; a brush lists its duration range", T, async t => {
    if (!need(t, "KAIROS_RESULT_LATENCY")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const api = await apiFromPage<Answer>(page, "latency?r=0");
    const n = api.requests.length;
    assert.ok(n > 100, `the orders sample's requests were seen: ${n}`);
    assert.ok(await page.locator("#requests").isVisible(), "the requests view is shown");
    assert.ok(await page.locator("#timeline-section").isVisible(), "and the timeline");

    // The lane: one bar per request, all in the whole view.
    const lane = page.locator("#requests-lane");
    assert.equal(Number(await lane.getAttribute("data-requests")), n, "a bar per request");
    assert.equal(Number(await lane.getAttribute("data-visible")), n, "all in the whole view");
    assert.ok(await inked(page, "#requests-lane") > 0, "the lane is drawn");
    // Zoomed in, the lane shows the requests of the timeline's range.
    await page.click("#zoom-in");
    await page.click("#zoom-in");
    await page.click("#zoom-in");
    await waitReady(page);
    const [f, to] = await range(page, "#timeline");
    assert.deepEqual(await range(page, "#requests-lane"), [f, to], "the lane follows the timeline's range");
    const inView = api.requests.filter(q => q.start + q.duration >= f && q.start <= to).length;
    assert.ok(inView < n, `zooming in leaves requests out: ${inView} of ${n}`);
    assert.equal(Number(await lane.getAttribute("data-visible")), inView, "the requests of the view");
    await page.click("#zoom-reset");
    await waitReady(page);

    // The histogram: the API's buckets, holding every request.
    const bars = page.locator("#requests-histogram rect.hist-bar");
    assert.equal(await bars.count(), api.histogram.length, "a bar per bucket");
    const counts = (await bars.evaluateAll(rs => rs.map(r => Number(r.getAttribute("data-count")))));
    assert.equal(counts.reduce((a, c) => a + c, 0), n, "the bars hold every request");
    counts.forEach((c, i) => {
      assert.equal(c, api.requests.filter(q => inBucket(api.histogram, i, q.duration)).length, `bucket ${i}: the requests of its durations`);
    });
    const mark = page.locator("#requests-threshold-mark");
    assert.equal(Number(await mark.getAttribute("data-ns")), api.threshold, "the threshold is marked");
    const k = api.histogram.findIndex(b => api.threshold >= b.from && api.threshold < b.to);
    if (k >= 0) {
      const [bx, bw] = await bars.nth(k).evaluate(r => { const b = r.getBoundingClientRect(); return [b.x, b.width]; });
      const mx = await mark.evaluate(l => l.getBoundingClientRect().x);
      assert.ok(mx >= bx! - 2 && mx <= bx! + bw! + 2, `the threshold line (${mx}) is inside its bucket's bar (${bx}, ${bw} wide)`);
    }

    // Brush the slowest buckets (at most 500 requests, all listed).
    let hi = api.histogram.length - 1, lo = hi;
    const sum = (a: number, b: number): number => api.histogram.slice(a, b + 1).reduce((s, x) => s + x.count, 0);
    while (lo > 0 && sum(lo - 1, hi) <= 500) lo--;
    const want = api.requests.filter(q => (lo === 0 || q.duration >= api.histogram[lo]!.from) && q.duration < api.histogram[hi]!.to);
    assert.ok(want.length > 0 && want.length <= 500, `brushing ${lo}..${hi}: ${want.length} requests`);
    const hist = page.locator("#requests-histogram");
    await hist.scrollIntoViewIfNeeded();
    const hb = (await hist.boundingBox())!;
    // The middle of a bar's column (an empty bucket's bar has no height, so not its box).
    const barX = (i: number): Promise<number> => bars.nth(i).evaluate(r => { const b = r.getBoundingClientRect(); return b.x + b.width / 2; });
    await page.mouse.move(await barX(lo), hb.y + hb.height / 2);
    await page.mouse.down();
    await page.mouse.move(await barX(hi), hb.y + hb.height / 2, { steps: 4 });
    await page.mouse.up();
    await waitReady(page);
    assert.equal(Number(await hist.getAttribute("data-brush-from")), api.histogram[lo]!.from);
    assert.equal(Number(await hist.getAttribute("data-brush-to")), api.histogram[hi]!.to);
    const table = page.locator("#requests-table");
    assert.equal(await table.getAttribute("data-brushed"), "true");
    assert.equal(Number(await table.getAttribute("data-selected")), want.length, "the table lists the brushed requests");
    const ids = await table.locator("tbody tr").evaluateAll(rs => rs.map(r => Number(r.getAttribute("data-id"))));
    assert.deepEqual([...ids].sort((a, b) => a - b), want.map(q => q.id).sort((a, b) => a - b), "exactly the requests of the range");
    assert.equal(Number(await lane.getAttribute("data-highlighted")), want.length, "the lane highlights them");
    assert.equal(sum(lo, hi), want.length, "as many as the brushed bars hold");
    await screenshot(page, "requests-brushed");

    // Brushing the first bucket alone: shorter than its end (what is shorter than its start too).
    await page.mouse.move(await barX(0), hb.y + hb.height / 2);
    await page.mouse.down();
    await page.mouse.up();
    await waitReady(page);
    const first = api.requests.filter(q => q.duration < api.histogram[0]!.to).length;
    assert.equal(Number(await table.getAttribute("data-selected")), first, "one bar: the requests of its bucket");
    assert.equal(Number(await lane.getAttribute("data-highlighted")), first);
    // The slow button: the requests the API calls slow.
    await page.click("#requests-brush-slow");
    await waitReady(page);
    assert.equal(Number(await table.getAttribute("data-selected")), api.requests.filter(q => q.slow).length, "the slow requests");
    await page.click("#requests-brush-clear");
    await waitReady(page);
    assert.equal(await table.getAttribute("data-brushed"), "false");
    assert.equal(Number(await lane.getAttribute("data-highlighted")), 0);
    noErrors(errors);
    await page.close();
  });

  it("zooms to a picked slow request and explains it as the API does", T, async t => {
    if (!need(t, "KAIROS_RESULT_LATENCY")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const api = await apiFromPage<Answer>(page, "latency?r=0");
    const span = Number(await page.locator("#timeline").getAttribute("data-to"));
    // Slow requests inside the page's time range, longest first.
    const slow = api.requests.filter(q => q.slow && q.start + q.duration <= span).sort((a, b) => b.duration - a.duration);
    assert.ok(slow.length >= 2, `slow requests to pick: ${slow.length}`);

    // In the lane: the longest request under the pointer is picked.
    const q = slow[0]!;
    const lane = page.locator("#requests-lane");
    const p = await laneX(lane, q.start + q.duration / 2);
    await page.mouse.click(p.x, p.y);
    await waitReady(page);
    await zoomedTo(page, q);
    assert.equal(await lane.getAttribute("data-picked"), String(q.id));
    const detail = page.locator("#request-detail");
    assert.equal(await detail.getAttribute("data-id"), String(q.id));
    assert.equal(await page.locator("#request-cause").textContent(), q.cause, "the API's cause sentence");
    for (const k of api.part_keys) {
      assert.equal(Number(await page.locator(`#request-parts li[data-part="${k}"]`).getAttribute("data-ns")), q.parts[k], `part ${k}`);
    }
    // The picked request is drawn where the timeline puts its middle.
    const mid = await laneX(lane, q.start + q.duration / 2);
    const box = (await lane.boundingBox())!;
    const alpha = await lane.evaluate((cv, at) => {
      const c = cv as HTMLCanvasElement, s = c.width / c.clientWidth;
      return c.getContext("2d")!.getImageData(Math.round(at.x * s), Math.round(at.y * s), 1, 1).data[3];
    }, { x: mid.x - box.x, y: box.height - 4 });
    assert.ok((alpha ?? 0) > 0, "the request's bar is under its middle");
    await screenshot(page, "requests-picked");

    // In the table (the slowest requests before any brush): a row picks its request.
    await page.click("#zoom-reset");
    await waitReady(page);
    const r = slow[1]!;
    const row = page.locator(`#requests-table tr[data-id="${r.id}"]`);
    await row.scrollIntoViewIfNeeded();
    await row.click();
    await waitReady(page);
    await zoomedTo(page, r);
    assert.equal(await page.locator("#request-cause").textContent(), r.cause);
    assert.match((await row.getAttribute("class")) ?? "", /picked/);
    noErrors(errors);
    await page.close();
  });

  it("sets the mean slow request beside the mean normal one", T, async t => {
    if (!need(t, "KAIROS_RESULT_LATENCY")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const api = await apiFromPage<Answer>(page, "latency?r=0");
    const slow = api.requests.filter(q => q.slow), normal = api.requests.filter(q => !q.slow);
    assert.ok(slow.length > 0 && normal.length > 0, `slow ${slow.length}, normal ${normal.length}`);
    const box = page.locator("#requests-compare");
    await box.scrollIntoViewIfNeeded();
    assert.equal(await box.locator(".compare-row .parts-bar").count(), 2, "a bar for each mean");
    const mean = (qs: Req[], f: (q: Req) => number): number => Math.round(qs.reduce((a, q) => a + f(q), 0) / qs.length);
    for (const k of [...api.part_keys, "whole"]) {
      const get = (q: Req): number => (k === "whole" ? q.duration : q.parts[k] ?? 0);
      const tr = box.locator(`tr[data-part="${k}"]`);
      assert.equal(Number(await tr.locator("td.slow-mean").getAttribute("data-ns")), mean(slow, get), `slow mean of ${k}`);
      assert.equal(Number(await tr.locator("td.normal-mean").getAttribute("data-ns")), mean(normal, get), `normal mean of ${k}`);
      assert.match(await tr.locator("td.slow-mean").innerText(), /\d (ns|µs|ms|s)$/);
      assert.match(await tr.locator("td.normal-mean").innerText(), /\d (ns|µs|ms|s)$/);
    }
    const how = await page.locator("#requests-threshold").innerText();
    assert.ok(how.includes(api.threshold_how), `how the threshold was chosen: ${how}`);
    assert.ok(how.includes(`${withCommas(slow.length)} of ${withCommas(api.requests.length)}`), how);
    assert.equal(Number(await page.locator("#requests-threshold").getAttribute("data-ns")), api.threshold);
    await screenshot(page, "requests-slow-vs-normal");
    noErrors(errors);
    await page.close();
  });
});
