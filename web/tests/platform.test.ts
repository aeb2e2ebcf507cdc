// Browser test of the platform picture on a result made here (a short hotspots collection of
// a shell loop) whose platform snapshot is replaced by the recorded 2-socket Sandy Bridge-EP
// (`crates/analysis/topology/tests/golden/platform-snb-ep-2s.json`, written from the capture
// in shared/fixtures/topology by the topology crate's golden test): devices under the right
// node, the NVMe with numa_node -1 shown as unknown, virtual interfaces with no node, "not
// measurable here" where the result has no measurement, and the check's sentences.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BIN, T, apiFromPage, getBrowser, need, noErrors, openPage, screenshot, serve, type Server } from "./harness";

const SNAPSHOT = join(process.cwd(), "..", "crates/analysis/topology/tests/golden/platform-snb-ep-2s.json");

interface Answer { samples: number; usage: { samples_by_node: Record<string, number>; pages_by_node: unknown }; findings: { device: string; verdict: string; sentence: string }[] }

describe("platform picture of the recorded two-socket machine", () => {
  let srv: Server | null = null;
  let dir = "";
  before(async () => {
    if (!BIN) return;
    dir = mkdtempSync(join(tmpdir(), "kairos-platform-"));
    const res = join(dir, "res");
    const r = spawnSync(BIN, ["collect", "hotspots", "-q", "-r", res, "--", "sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"], { encoding: "utf8" });
    assert.equal(r.status, 0, `kairos collect failed: ${r.stderr}`);
    copyFileSync(SNAPSHOT, join(res, "platform.json"));
    srv = await serve(res);
  });
  after(async () => { await srv?.stop(); if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("puts devices under their node and says what is not measured", T, async t => {
    if (!need(t)) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const pic = page.locator("#platform-picture");
    await pic.waitFor();
    assert.equal(await pic.getAttribute("data-sockets"), "2");
    assert.equal(await pic.getAttribute("data-nodes"), "2");
    // Each node inside its socket.
    assert.equal(await page.locator('.platform-socket[data-socket="0"] .platform-node[data-node="0"]').count(), 1);
    assert.equal(await page.locator('.platform-socket[data-socket="1"] .platform-node[data-node="1"]').count(), 1);
    assert.match(await page.locator('.platform-node[data-node="1"] [data-fact="CPUs"]').innerText(), /8-15/);
    assert.match(await page.locator('.platform-node[data-node="0"] [data-fact="Distances"]').innerText(), /node 1: 21/);
    // Devices under the node the oracle gives.
    const under = async (node: string) => page.locator(`.platform-node[data-node="${node}"] li.platform-device`).evaluateAll(els => els.map(e => e.getAttribute("data-device")));
    const n0 = await under("0"), n1 = await under("1"), unknown = await under("unknown");
    for (const d of ["eth0", "eth1", "sda"]) assert.ok(n0.includes(d), `${d} on node 0: ${n0}`);
    for (const d of ["ib0/mlx4_0", "mic0"]) assert.ok(n1.includes(d), `${d} on node 1: ${n1}`);
    assert.ok(!n0.includes("nvme0n1") && !n1.includes("nvme0n1"), "the NVMe is on no node");
    assert.ok(unknown.includes("nvme0n1"), `the NVMe is under no known node: ${unknown}`);
    const nvme = page.locator('li.platform-device[data-device="nvme0n1"]');
    assert.equal(await nvme.getAttribute("data-node-source"), "unknown");
    assert.match(await nvme.innerText(), /node unknown: numa_node is -1/);
    for (const v of ["br0", "lo"]) assert.equal(await page.locator(`li.platform-device[data-device="${v}"]`).getAttribute("data-node-source"), "virtual");
    // Measured here: samples (all on this machine's CPUs 0-1, node 0 of the snapshot).
    const api = await apiFromPage<Answer>(page, "platform?r=0");
    assert.ok(api.samples > 0, "the loop was sampled");
    assert.equal(api.usage.pages_by_node, null, "a hotspots result has no page placement");
    assert.match(await page.locator('.platform-node[data-node="0"] [data-fact="Samples"]').innerText(), /\(100\.0%\)/);
    // Not measured: pages, bandwidth, device traffic.
    for (const f of ["Resident pages", "Bandwidth"]) {
      assert.match(await page.locator(`.platform-node[data-node="0"] [data-fact="${f}"]`).innerText(), /not measurable here/, f);
    }
    assert.match(await page.locator('li.platform-device[data-device="eth0"] [data-fact="traffic"]').innerText(), /not measurable here/);
    // The check: the node-1 devices are mismatches with node 1's CPUs as the fix.
    const ib = page.locator('#platform-findings li[data-device="ib0/mlx4_0 (0000:82:00.0)"]');
    assert.equal(await ib.getAttribute("data-verdict"), "mismatch");
    assert.match(await ib.innerText(), /is on node 1; 100% of the samples of the target's threads ran on node 0 \(thread mostly off node 1: \d+ \S+ 100%\): .*pin the threads to node 1's CPUs 8-15/);
    assert.equal(await page.locator('#platform-findings li[data-device="eth0 (0000:02:00.0)"]').getAttribute("data-verdict"), "local");
    await pic.scrollIntoViewIfNeeded();
    await screenshot(page, "platform-two-sockets");
    noErrors(errors);
    await page.close();
  });
});

/** Sends `bytes` over a loopback TCP connection; resolves when the reader has them all. */
async function loopback(bytes: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    let got = 0;
    const srv = createServer(sock => sock.on("data", b => { got += b.length; if (got >= bytes) { sock.destroy(); srv.close(); resolve(); } }));
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      const c = connect(port, "127.0.0.1", () => { c.end(Buffer.alloc(bytes, 7)); });
      c.on("error", reject);
    });
  });
}

// An io collection made here while the test sends 16 MiB over loopback: each device of the
// platform picture shows the traffic its own counters measured (the result's io.json is
// the oracle), and `lo` carried at least what was sent.
describe("device traffic of an io collection", () => {
  const SENT = 16 << 20;
  let srv: Server | null = null;
  let dir = "";
  before(async () => {
    if (!BIN) return;
    dir = mkdtempSync(join(tmpdir(), "kairos-io-"));
    const res = join(dir, "res");
    const p = spawn(BIN, ["collect", "io", "-q", "-a", "-d", "2", "-r", res], { stdio: "ignore" });
    const done = new Promise<number | null>(r => p.on("exit", code => r(code)));
    await new Promise(r => setTimeout(r, 600));
    await loopback(SENT);
    assert.equal(await done, 0, "kairos collect io failed");
    srv = await serve(res);
  });
  after(async () => { await srv?.stop(); if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("shows each device's measured traffic", T, async t => {
    if (!need(t)) return;
    const io = JSON.parse(readFileSync(join(dir, "res", "io.json"), "utf8")) as { series: { name: string; flow: string }[]; points: { values: number[] }[] };
    const rx = io.series.findIndex(s => s.name === "lo" && s.flow === "rx");
    assert.ok(rx >= 0, "io.json has lo rx");
    const total = io.points.reduce((a, p) => a + (p.values[rx] ?? 0), 0);
    assert.ok(total >= SENT, `lo received ${total} bytes, ${SENT} sent`);
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const lo = page.locator('li.platform-device[data-device="lo"] [data-fact="traffic"]');
    await lo.waitFor();
    const text = await lo.innerText();
    assert.ok(text.includes(`rx ${(total / 1e6).toFixed(total >= 1e8 ? 0 : 3)} MB (`), `${text} vs ${total} bytes in io.json`);
    assert.match(text, /tx [\d.]+ MB/);
    await screenshot(page, "platform-io-traffic");
    noErrors(errors);
    await page.close();
  });

  it("draws each flow over time with the figures of io.json", T, async t => {
    if (!need(t)) return;
    const io = JSON.parse(readFileSync(join(dir, "res", "io.json"), "utf8")) as {
      series: { name: string; flow: string }[]; points: { secs: number; values: number[] }[]; ddio_unmeasured: string | null;
    };
    const rx = io.series.findIndex(s => s.name === "lo" && s.flow === "rx");
    const total = io.points.reduce((a, p) => a + (p.values[rx] ?? 0), 0);
    const secs = io.points.reduce((a, p) => a + p.secs, 0);
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const sec = page.locator("#io");
    await sec.locator("#io-series").waitFor();
    assert.ok(await page.locator("#io-timeline").isVisible(), "the chart is drawn");
    const cells = await sec.locator('#io-series tr[data-series="lo rx"] td').allInnerTexts();
    assert.equal(cells[3], (total / 1e6).toFixed(3), `total of lo rx: ${cells}`);
    assert.equal(cells[4], (total / secs / 1e6).toFixed(3), `average of lo rx: ${cells}`);
    // What this machine cannot measure is said, with the reason io.json gives.
    const ddio = sec.locator('[data-unmeasured^="DDIO"]');
    assert.equal(await ddio.count(), io.ddio_unmeasured ? 1 : 0);
    if (io.ddio_unmeasured) assert.ok((await ddio.innerText()).includes(io.ddio_unmeasured));
    assert.ok(!(await page.locator("#timeline-section").isVisible()), "no sample views for an io result");
    // The traced device use: what the readers took from lo, as device_use.json says.
    const use = JSON.parse(readFileSync(join(dir, "res", "device_use.json"), "utf8")) as { flows: { device: string; read_bytes: number }[] };
    const loRead = use.flows.filter(f => f.device === "net:lo").reduce((a, f) => a + f.read_bytes, 0);
    assert.ok(loRead >= SENT, `device_use.json: ${loRead} bytes read from lo`);
    const shown = await sec.locator('#io-use tr[data-use^="net:lo "] td:nth-child(4)').allInnerTexts();
    const sum = shown.reduce((a, c) => a + Number(c), 0);
    assert.ok(Math.abs(sum - loRead / 1e6) < 0.001 * (shown.length + 1), `page ${sum} MB vs ${loRead} bytes`);
    await sec.scrollIntoViewIfNeeded();
    await screenshot(page, "io-view");
    noErrors(errors);
    await page.close();
  });
});
