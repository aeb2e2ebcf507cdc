// Browser tests of the NUMA part of a memory-access result: one node here (placement and
// first touch shown, no remote access possible), and two nodes from the emulated two-node
// machine when its results are given (serial initialisation diagnosed, parallel one not).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { BIN, T, apiFromPage, inked, getBrowser, need, noErrors, openPage, parseCount, screenshot, serve, waitReady, type Server } from "./harness";

const env = process.env;

interface Answer { nodes_with_cpus: number; objects: { name: string; pages_total: number; pages: Record<string, number> }[]; timeline: unknown[] }

/** Every object row's node cells add up to its Pages cell; returns (name, pages, per node). */
async function rows(page: Page): Promise<{ name: string; pages: number; nodes: Record<string, number> }[]> {
  const out = [];
  const trs = page.locator("table.numa-objects tbody tr[data-object]");
  for (let i = 0; i < await trs.count(); i++) {
    const tr = trs.nth(i);
    const name = await tr.locator("td").first().innerText();
    const pages = parseCount(await tr.locator("td").nth(2).innerText());
    const nodes: Record<string, number> = {};
    for (const td of await tr.locator("td.node-pages").all()) nodes[(await td.getAttribute("data-node"))!] = parseCount(await td.innerText());
    assert.equal(Object.values(nodes).reduce((a, b) => a + b, 0), pages, `${name}: node cells add up to its pages`);
    out.push({ name, pages, nodes });
  }
  return out;
}

describe("NUMA placement on one node", () => {
  let srv: Server | null = null;
  before(async () => { if (BIN && env.KAIROS_RESULT_MEMACCESS) srv = await serve(env.KAIROS_RESULT_MEMACCESS); });
  after(async () => { await srv?.stop(); });

  it("shows first touch and placement, and says no remote access is possible", T, async t => {
    if (!need(t, "KAIROS_RESULT_MEMACCESS")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    const numa = page.locator("#numa");
    await numa.waitFor();
    const api = await apiFromPage<Answer>(page, "numa?r=0");
    assert.equal(api.nodes_with_cpus, 1, "this machine has one node");
    assert.equal(await numa.getAttribute("data-nodes"), "1");
    assert.match(await page.locator('#numa-facts tr[data-fact="Nodes"] td').innerText(), /^1 \(node0: CPUs /);
    assert.match(await page.locator('#numa-facts tr[data-fact="Remote access"] td').innerText(), /none possible/);
    assert.match(await page.locator("#numa-problems li.none").innerText(), /One NUMA node/);
    assert.equal(await page.locator("#numa-problems li.numa-problem").count(), 0);
    const rs = await rows(page);
    assert.equal(rs.length, Math.min(api.objects.length, 20));
    assert.equal(rs[0]!.name, api.objects[0]!.name, "the page shows the API's order");
    // The counters' block: its page is on node 0, first touched by a thread of the program.
    const counters = rs.find(r => /^false_sharing\.c:\d+ \(512 B\)$/.test(r.name));
    assert.ok(counters && counters.nodes["0"]! >= 1, `the counters' block has a page on node 0: ${JSON.stringify(rs)}`);
    const first = await page.locator("table.numa-objects tbody tr[data-object]").first().locator("td.first-touch").innerText();
    assert.match(first, /^thread \d+ in \S+ \(node 0\)/);
    const c = page.locator("#numa-placement");
    assert.ok(Number(await c.getAttribute("data-queries")) >= 1, "placement was queried");
    assert.ok(await inked(page, "#numa-placement") > 100, "the placement chart has ink");
    await page.locator("#numa-touch summary").click();
    assert.ok(await page.locator("table.numa-touch tbody tr").count() >= 1, "first touches listed");
    await numa.scrollIntoViewIfNeeded();
    await screenshot(page, "numa-one-node");
    noErrors(errors);
    await page.close();
  });
});

describe("NUMA placement on two nodes", () => {
  let srv: Server | null = null;
  before(async () => {
    if (BIN && env.KAIROS_RESULT_NUMA_SERIAL && env.KAIROS_RESULT_NUMA_PARALLEL) srv = await serve(env.KAIROS_RESULT_NUMA_SERIAL, env.KAIROS_RESULT_NUMA_PARALLEL);
  });
  after(async () => { await srv?.stop(); });

  it("diagnoses serial initialisation and not the parallel one", T, async t => {
    if (!need(t, "KAIROS_RESULT_NUMA_SERIAL", "KAIROS_RESULT_NUMA_PARALLEL")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    await page.locator("#numa").waitFor();
    assert.equal(await page.locator("#numa").getAttribute("data-nodes"), "2");
    // Each array is a problem, or (an emulator skews sampling towards one instruction of
    // the loop) not judged for want of samples; at least one is judged.
    const problems = await page.locator("#numa-problems li.numa-problem").allInnerTexts();
    const unjudged = await page.locator("#numa-problems li.numa-unjudged").allInnerTexts();
    assert.ok(problems.length >= 1, `at least one array diagnosed: ${problems.join(" | ")} / ${unjudged.join(" | ")}`);
    const array = "`[abc]` \\(triad\\.c:\\d+, \\d+ MiB\\): all pages on node 0, first touched by thread \\d+ \\(the main thread\\) in `init_arrays`; ";
    for (const p of problems) assert.match(p, new RegExp("^" + array + "\\d+ of \\d+ threads that (read|write|use) it run on node 1"));
    for (const p of unjudged) assert.match(p, new RegExp("^Not judged: " + array + "(no|only \\d+) sampled access"));
    assert.equal(problems.length + unjudged.length, 3, "the three arrays, each said once");
    const arrays = (await rows(page)).filter(r => /^triad\.c:\d+ \(\d+ MiB\)$/.test(r.name));
    assert.equal(arrays.length, 3, "three arrays");
    for (const a of arrays) assert.equal(a.nodes["1"] ?? 0, 0, `${a.name}: nothing on node 1 after serial init`);
    await screenshot(page, "numa-two-nodes-serial");

    await page.selectOption("#result", "1");
    await waitReady(page);
    await page.locator("#numa").waitFor();
    assert.equal(await page.locator("#numa-problems li.numa-problem").count(), 0, "parallel init: no problem");
    const split = (await rows(page)).filter(r => /^triad\.c:\d+ \(\d+ MiB\)$/.test(r.name));
    assert.equal(split.length, 3);
    for (const a of split) assert.ok((a.nodes["0"] ?? 0) > 0 && (a.nodes["1"] ?? 0) > 0, `${a.name}: pages on both nodes`);
    await screenshot(page, "numa-two-nodes-parallel");
    noErrors(errors);
    await page.close();
  });
});
