// Browser test of the memory-bandwidth section: a result whose timeline holds the pcm
// snapshot's figures (crates/bandwidth/tests/fixtures/pcm-2s-ticks.json: 20 ticks of 100 ms,
// two sockets, a stand-in maximum of 90 GB/s) shows the chart with its maximum line, the
// histogram and the per-socket figures; a result collected here without bandwidth counters
// says why. Run by crates/cli/tests/bandwidth_view.rs.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { BIN, T, apiFromPage, inked, getBrowser, need, noErrors, openPage, screenshot, serve, type Server } from "./harness";

const env = process.env;

interface Answer { available: boolean; why?: string; dram: [number, number, number][]; histogram: { seconds: number }[]; stats: { domain: string; flow: string; peak: number }[] }

describe("bandwidth view", () => {
  let srv: Server | null = null, none: Server | null = null;
  before(async () => {
    if (BIN && env.KAIROS_RESULT_BANDWIDTH) srv = await serve(env.KAIROS_RESULT_BANDWIDTH);
    if (BIN && env.KAIROS_RESULT_BANDWIDTH_NONE) none = await serve(env.KAIROS_RESULT_BANDWIDTH_NONE);
  });
  after(async () => { await srv?.stop(); await none?.stop(); });

  it("bandwidth: draws the recorded timeline, the maximum and the histogram", T, async t => {
    if (!need(t, "KAIROS_RESULT_BANDWIDTH")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const sec = page.locator("#bandwidth");
    await sec.locator("#bandwidth-timeline").waitFor();
    const api = await apiFromPage<Answer>(page, "bandwidth?r=0");
    assert.equal(api.available, true);
    assert.equal(api.dram.length, 20, "20 ticks in the fixture");
    const c = page.locator("#bandwidth-timeline");
    assert.equal(await c.getAttribute("data-ticks"), "20");
    // The snapshot's System Memory Throughput, 72140.62 MB/s, is the peak; the maximum line is at 90.
    assert.equal(await c.getAttribute("data-peak"), "72.141");
    assert.equal(await c.getAttribute("data-maximum"), "90.000");
    assert.ok(await inked(page, "#bandwidth-timeline") > 500, "the timeline has ink");
    assert.equal(await page.locator("#bandwidth-histogram").getAttribute("data-bins"), "10");
    assert.ok(await inked(page, "#bandwidth-histogram") > 200, "the histogram has ink");
    const secs = api.histogram.reduce((a, b) => a + b.seconds, 0);
    assert.ok(Math.abs(secs - 2.0) < 1e-9, `the histogram covers the 2 s of ticks: ${secs}`);
    // Socket 1 reads: the snapshot's 29624.51 MB/s at its peak, 65.8% of its 45 GB/s node maximum.
    const row = page.locator('#bandwidth-stats tr[data-domain="1"][data-flow="read"] td');
    assert.equal(await row.nth(0).innerText(), "socket 1");
    assert.equal(await row.nth(3).innerText(), "29.62");
    assert.equal(await row.nth(5).innerText(), "65.8%");
    assert.match(await page.locator("#bandwidth-source").innerText(), /Maximum: 90\.0 GB\/s/);
    await sec.scrollIntoViewIfNeeded();
    await screenshot(page, "bandwidth");
    noErrors(errors);
    await page.close();
  });

  it("bandwidth: says why a result collected without counters has no timeline", T, async t => {
    if (!need(t, "KAIROS_RESULT_BANDWIDTH_NONE")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), none!.url, errors);
    const api = await apiFromPage<Answer>(page, "bandwidth?r=0");
    const sec = page.locator("#bandwidth");
    await sec.locator("h2").waitFor();
    if (api.available) return void t.skip("this machine has bandwidth counters");
    assert.equal(await sec.getAttribute("data-available"), "false");
    assert.equal(await page.locator("#bandwidth-why").innerText(), `No bandwidth timeline: ${api.why}.`);
    assert.equal(await page.locator("#bandwidth-timeline").count(), 0);
    noErrors(errors);
    await page.close();
  });
});
