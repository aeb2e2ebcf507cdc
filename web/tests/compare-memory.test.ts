// Browser test of the compare view's memory objects: `samples/false_sharing 2 N` and the same
// with `--padded` (KAIROS_RESULT_MEMACCESS, KAIROS_RESULT_MEMACCESS_PADDED, collected by
// crates/cli/tests/view_browser.rs). The counters' object (its allocation site) is a row in
// both, with each side's samples, loads and stores as that result's own memory view gives
// them, the ratio of their times, and its false-sharing line 1 -> 0.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BIN, T, apiFromPage, getBrowser, need, noErrors, openPage, screenshot, serve, waitReady, withCommas, type Server } from "./harness";

const env = process.env;

interface Obj { name: string; samples: number; loads: number; stores: number; weight: number }
interface Side { samples: number; weight: number; false_sharing: number; true_sharing: number }
interface Objects { a: { false_sharing: number }; b: { false_sharing: number }; rows: { name: string; a: Side; b: Side; ratio: number | null }[] }

/** The counters' allocation site as objects are named: `false_sharing.c:LINE (512 B)`. */
function countersSite(): string {
  const src = readFileSync(join(process.cwd(), "../samples/false_sharing.c"), "utf8").split("\n");
  const n = 1 + src.findIndex(l => l.includes("malloc(sizeof *object)"));
  assert.ok(n > 0, "the sample allocates its counters with malloc(sizeof *object)");
  return `false_sharing.c:${n} (512 B)`;
}

describe("comparing memory objects before and after a fix", () => {
  let srv: Server | null = null;
  before(async () => {
    if (BIN && env.KAIROS_RESULT_MEMACCESS && env.KAIROS_RESULT_MEMACCESS_PADDED) {
      srv = await serve(env.KAIROS_RESULT_MEMACCESS, env.KAIROS_RESULT_MEMACCESS_PADDED);
    }
  });
  after(async () => { await srv?.stop(); });

  it("compare memory: the counters' object in both runs, its ratio and false sharing 1 -> 0", T, async t => {
    if (!need(t, "KAIROS_RESULT_MEMACCESS", "KAIROS_RESULT_MEMACCESS_PADDED")) return;
    const errors: string[] = [];
    const page = await openPage(await getBrowser(), srv!.url, errors);
    await page.click("#tab-compare");
    await waitReady(page);
    await page.locator("#compare-objects").waitFor();
    const site = countersSite();
    const row = page.locator(`#compare-objects tr[data-object="${site}"]`);
    assert.equal(await row.count(), 1, `a row for ${site}`);
    const cells = await row.locator("td").allInnerTexts();
    // Each side as that result's own memory view counts the object.
    const own = async (r: number): Promise<Obj> => {
      const m = await apiFromPage<{ objects: Obj[] }>(page, `memory?r=${r}&objects=1000`);
      const o = m.objects.find(x => x.name === site);
      assert.ok(o, `result ${r} has ${site}`);
      return o;
    };
    const [a, b] = [await own(0), await own(1)];
    assert.ok(a.samples > 0 && b.samples > 0, "sampled in both runs");
    assert.deepEqual([cells[0], cells[1]], [withCommas(a.samples), withCommas(b.samples)], "samples A, B");
    assert.deepEqual([cells[5], cells[6], cells[7], cells[8]], [a.loads, b.loads, a.stores, b.stores].map(withCommas), "loads and stores A, B");
    const ratio = b.weight / a.weight;
    assert.equal(cells[11], ratio.toFixed(ratio >= 100 ? 0 : 2) + "×", "time ratio B/A");
    assert.equal(cells[12], "1 → 0", "the false-sharing line goes away");
    const api = await apiFromPage<{ objects: Objects }>(page, "compare?a=0&b=1");
    const r = api.objects.rows.find(x => x.name === site)!;
    assert.deepEqual([r.a.false_sharing, r.b.false_sharing], [1, 0]);
    assert.equal(await page.locator("#compare-verdicts").getAttribute("data-false-sharing"), `${api.objects.a.false_sharing}-${api.objects.b.false_sharing}`);
    assert.equal(api.objects.a.false_sharing, 1);
    assert.equal(api.objects.b.false_sharing, 0);
    // The run's figures kairos compare gives, NUMA ones included, stay above the objects.
    const figures = await page.locator("#compare-facts tr[data-figure]").evaluateAll(rs => rs.map(x => x.getAttribute("data-figure")));
    assert.ok(figures.includes("cache lines with false sharing"), figures.join(", "));
    const numa = figures.filter(f => f && (f.startsWith("remote accesses") || f.startsWith("pages on node") || f === "objects with a NUMA problem"));
    assert.ok(numa.length >= 1, `NUMA figures: ${figures.join(", ")}`);
    await page.locator("#compare-objects").scrollIntoViewIfNeeded();
    await screenshot(page, "compare-memory-objects");
    noErrors(errors);
    await page.close();
  });
});
