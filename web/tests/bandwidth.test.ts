// Browser test of the memory-bandwidth section: a result whose timeline holds the pcm
// snapshot's figures (crates/bandwidth/tests/fixtures/pcm-2s-ticks.json: 20 ticks of 100 ms,
// two sockets, a stand-in maximum of 90 GB/s; the fourth tick starts with the first sample)
// and its per-channel lines shows the chart with its maximum line, the histogram, the
// per-socket and per-channel figures and the report's by-object table, and follows the
// timeline's zoom; a result collected here without bandwidth counters says why. Run by
// crates/cli/tests/bandwidth_view.rs.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { BIN, T, apiFromPage, inked, getBrowser, need, noErrors, openPage, screenshot, serve, waitReady, type Server } from "./harness";

const env = process.env;

interface Answer { available: boolean; why?: string; dram: [number, number, number][]; histogram: { seconds: number }[]; stats: { domain: string; flow: string; peak: number }[] }

interface Ticks { tick_ms: number; mb_per_s: Record<string, Record<string, number>>; scale: number[] }

/** pcm's per-channel lines: [socket, channel, flow, MB/s] (left column socket 0, right socket 1). */
function pcmChannels(text: string): [number, number, string, number][] {
  const out: [number, number, string, number][] = [];
  const ch = [0, 0];
  for (const line of text.split("\n")) {
    line.split("|").slice(1, 3).forEach((col, socket) => {
      const r = /Mem Ch (\d+): Reads \(MB\/s\):\s*([\d.]+)/.exec(col), w = /Writes\(MB\/s\):\s*([\d.]+)/.exec(col);
      if (r) { ch[socket] = Number(r[1]); out.push([socket, ch[socket]!, "read", Number(r[2])]); }
      else if (w) out.push([socket, ch[socket]!, "write", Number(w[1])]);
    });
  }
  return out;
}

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

  it("bandwidth: follows the zoom, draws channels with pcm's figures, shows the by-object table", T, async t => {
    if (!need(t, "KAIROS_RESULT_BANDWIDTH", "KAIROS_BANDWIDTH_TICKS", "KAIROS_PCM_SNAPSHOT")) return;
    const ticks = JSON.parse(readFileSync(env.KAIROS_BANDWIDTH_TICKS!, "utf8")) as Ticks;
    const errors: string[] = [];
    let page = await openPage(await getBrowser(), srv!.url, errors);
    await page.locator("#bandwidth-timeline").waitFor();
    const run = Number(await page.locator("#timeline").getAttribute("data-to"));
    assert.ok(run > 0, `the run has a duration: ${run}`);
    const row = (domain: string, flow: string) => page.locator(`#bandwidth-stats tr[data-domain="${domain}"][data-flow="${flow}"] td`);
    const whole = await row("all", "read").nth(2).innerText();
    await page.close();

    // The first half of the run: the ticks that overlap it, worked out from the tick file
    // (tick i starts 0.3 s before the first sample, plus i ticks).
    const half = Math.floor(run / 2), dur = ticks.tick_ms * 1e6;
    const inHalf = ticks.scale.map((k, i) => ({ k, s: i * dur - 3 * dur })).filter(x => x.s < half && x.s + dur > 0).map(x => x.k);
    assert.ok(inHalf.length >= 1 && inHalf.length < ticks.scale.length);
    const reads = Object.values(ticks.mb_per_s).reduce((a, f) => a + (f["read"] ?? 0), 0) / 1000;
    const mean = inHalf.reduce((a, b) => a + b, 0) / inHalf.length, peak = Math.max(...inHalf);
    page = await openPage(await getBrowser(), `${srv!.url}#r=0&view=0-${half}`, errors);
    const sec = page.locator("#bandwidth");
    await page.waitForFunction(h => document.querySelector("#bandwidth")?.getAttribute("data-range") === `0-${h}`, half);
    await waitReady(page);
    assert.equal(await page.locator("#bandwidth-timeline").getAttribute("data-ticks"), String(inHalf.length));
    assert.equal(await row("all", "read").nth(2).innerText(), (reads * mean).toFixed(2), "average of all reads over the half");
    assert.equal(await row("all", "read").nth(3).innerText(), (reads * peak).toFixed(2), "peak of all reads over the half");
    assert.notEqual(await row("all", "read").nth(2).innerText(), whole, "the half's average is not the whole run's");
    const api = await apiFromPage<Answer>(page, `bandwidth?r=0&from=0&to=${half}`);
    const secs = api.histogram.reduce((a, b) => a + b.seconds, 0);
    assert.ok(Math.abs(secs - inHalf.length * ticks.tick_ms / 1000) < 1e-9, `the histogram covers the half's ticks: ${secs}`);

    // Channels: pcm's per-channel figures; over the half, each is pcm's times the ticks' mean scale.
    const pcm = pcmChannels(readFileSync(env.KAIROS_PCM_SNAPSHOT!, "utf8"));
    assert.equal(pcm.length, 16, "2 sockets x 4 channels x read, write in the snapshot");
    const c = page.locator("#bandwidth-timeline");
    assert.equal(await c.getAttribute("data-drawn"), "domains");
    await page.locator("#bandwidth-channels").check();
    assert.equal(await c.getAttribute("data-drawn"), "channels");
    assert.equal(await c.getAttribute("data-lines"), "8", "one line per channel");
    assert.ok(await inked(page, "#bandwidth-timeline") > 500);
    for (const [socket, ch, flow, mb] of pcm) {
      const cells = page.locator(`#bandwidth-channel-stats tr[data-domain="${socket}"][data-channel="${ch}"][data-flow="${flow}"] td`);
      assert.equal(await cells.nth(0).innerText(), `socket ${socket}`);
      assert.equal(await cells.nth(3).innerText(), (mb / 1000 * mean).toFixed(2), `socket ${socket} channel ${ch} ${flow} average`);
      assert.equal(await cells.nth(4).innerText(), (mb / 1000 * peak).toFixed(2), `socket ${socket} channel ${ch} ${flow} peak`);
    }
    // The whole run: at its saturated ticks, the peak is pcm's own figure.
    const full = await apiFromPage<{ channel_stats: { domain: number; channel: number; flow: string; peak: number }[] }>(page, "bandwidth?r=0");
    for (const [socket, ch, flow, mb] of pcm) {
      const r = full.channel_stats.find(x => x.domain === socket && x.channel === ch && x.flow === flow);
      assert.ok(r && Math.abs(r.peak * 1000 - mb) < 1e-6, `socket ${socket} channel ${ch} ${flow}: ${r?.peak} GB/s vs pcm's ${mb} MB/s`);
    }

    // The by-object table: the report's own title, headers and rows (of the half, here).
    const obj = page.locator("#bandwidth-objects");
    const caption = await obj.locator("figcaption").innerText();
    assert.equal(caption, "Address samples in high-bandwidth intervals, by object and function");
    assert.deepEqual(await obj.locator("th").allInnerTexts(), ["Object", "Function", "Samples", "Share"]);
    const rows = await obj.locator("tbody tr").count();
    assert.ok(rows >= 1, "samples fall in the saturated ticks of the half");
    const report = spawnSync(BIN, ["report", "bandwidth", "-r", env.KAIROS_RESULT_BANDWIDTH!], { encoding: "utf8" });
    assert.equal(report.status, 0, report.stderr);
    assert.ok(report.stdout.includes(caption), "the report has the same table");
    const first = await obj.locator("tbody tr").first().locator("td").allInnerTexts();
    assert.ok(report.stdout.includes(first[0]!) && report.stdout.includes(first[1]!), `the report names ${first[0]} in ${first[1]}`);
    await sec.scrollIntoViewIfNeeded();
    await screenshot(page, "bandwidth-half-channels");
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
