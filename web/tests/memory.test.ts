// Browser tests of the memory-access section and of comparing a false-sharing run with its fix.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { BIN, T, apiFromPage, getBrowser, need, noErrors, openPage, screenshot, serve, waitReady, type Server } from "./harness";

const env = process.env;

/** The page's section of each view name. */
const SECTIONS: [string, string][] = [
  ["memory-access", "#memory"], ["bandwidth", "#bandwidth"], ["timeline", "#timeline-section"], ["trees", "#tree-section"], ["sample inspector", "#inspector"],
];

describe("a memory-access result", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_MEMACCESS && env.KAIROS_RESULT_A) srv = await serve(env.KAIROS_RESULT_MEMACCESS, env.KAIROS_RESULT_A); });
  after(async () => { await srv?.stop(); });

  it("draws the false-sharing line as two threads on distinct bytes", T, async t => {
    if (!need(t, "KAIROS_RESULT_MEMACCESS", "KAIROS_RESULT_A")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const res = await apiFromPage<{ results: { kind: string; views: string[] }[] }>(page, "results");
    assert.equal(res.results[0]!.kind, "memory-access");
    for (const [view, id] of SECTIONS) {
      assert.equal(await page.locator(id).isVisible(), res.results[0]!.views.includes(view), `${id} is shown as the views say`);
    }
    const memory = page.locator("#memory");
    assert.ok(await memory.isVisible(), "#memory shown");
    assert.match(await page.locator("#memory-verdicts").innerText(), /^1 cache line with false sharing/);
    assert.ok(await page.locator("table.memory-objects tbody tr").count() >= 1, "objects listed");
    const first = page.locator("table.memory-lines tbody tr").first();
    assert.equal(await first.locator(".verdict").innerText(), "false sharing");
    assert.match((await first.getAttribute("class")) ?? "", /selected/, "the false-sharing line is picked");
    assert.equal(await page.locator("#memory-verdict").innerText(), "false sharing");
    assert.match(await page.locator("#memory-fix").innerText(), /64-byte line/);

    // The grid: a row per thread, each with its own written bytes.
    const rows = page.locator("#memory-grid tbody tr");
    assert.equal(await rows.count(), 2, "two thread rows");
    const offsets: number[][] = [];
    for (let i = 0; i < 2; i++) {
      const row = rows.nth(i);
      offsets.push((await row.locator("td.hit").evaluateAll(cs => cs.map(c => Number((c as HTMLElement).dataset.offset)))));
      assert.ok(await row.locator("td.hit.w").count() >= 1, `thread row ${i} writes`);
      assert.equal(await row.locator("td.cell").count(), 64, "64 byte columns");
    }
    assert.ok(offsets.every(o => o.length === 8), `8 bytes each: ${JSON.stringify(offsets)}`);
    assert.ok(!offsets[0]!.some(o => offsets[1]!.includes(o)), `disjoint bytes: ${JSON.stringify(offsets)}`);

    // The series has ink and follows the timeline's range.
    const c = page.locator("#memory-series");
    assert.ok(Number(await c.getAttribute("data-samples")) > 0, "samples in the series");
    const inked = await c.evaluate(cv => {
      const x = cv as HTMLCanvasElement;
      const d = x.getContext("2d")!.getImageData(0, 0, x.width, x.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
      return n;
    });
    assert.ok(inked > 100, `the chart has ink: ${inked}`);
    const req = page.waitForRequest(r => r.url().includes("/api/memory") && r.url().includes("part=series"));
    await page.click("#zoom-in");
    await req;
    await waitReady(page);
    await screenshot(page, "memory-access");

    // A hotspots result: no memory section, its own views shown.
    await page.selectOption("#result", "1");
    await waitReady(page);
    assert.ok(!(await memory.isVisible()), "#memory hidden for a hotspots result");
    assert.ok(await page.locator("#timeline-section").isVisible() && await page.locator("#tree-section").isVisible());
    noErrors(errors);
    await page.close();
  });
});

describe("comparing false sharing with its fix", () => {
  let srv: Server | null = null;
  before(async () => {
    if (BIN && env.KAIROS_RESULT_MEMACCESS && env.KAIROS_RESULT_MEMACCESS_PADDED) {
      srv = await serve(env.KAIROS_RESULT_MEMACCESS, env.KAIROS_RESULT_MEMACCESS_PADDED);
    }
  });
  after(async () => { await srv?.stop(); });

  it("shows the false-sharing lines before and after, and the run times", T, async t => {
    if (!need(t, "KAIROS_RESULT_MEMACCESS", "KAIROS_RESULT_MEMACCESS_PADDED")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    await page.click("#tab-compare");
    await waitReady(page);
    const fs = await page.locator('#compare-facts tr[data-figure="cache lines with false sharing"] td').allInnerTexts();
    assert.deepEqual(fs.slice(0, 2), ["1", "0"], `false sharing before and after: ${fs.join(" | ")}`);
    const ts = await page.locator('#compare-facts tr[data-figure="cache lines with true sharing"] td').allInnerTexts();
    assert.deepEqual(ts.slice(0, 2), ["0", "0"]);
    const run = await page.locator('#compare-facts tr[data-figure="run time (s)"] td').allInnerTexts();
    assert.ok(Number(run[0]) > 0 && Number(run[1]) > 0, `run times: ${run.join(" | ")}`);
    const facts = await page.locator("#compare-facts tbody tr").allInnerTexts();
    const neither = facts.map(f => f.split("\t")).filter(c => c[1] === "n/a" && c[2] === "n/a");
    assert.deepEqual(neither, [], "no figure that neither result has");
    await screenshot(page, "memory-compare");
    noErrors(errors);
    await page.close();
  });
});
