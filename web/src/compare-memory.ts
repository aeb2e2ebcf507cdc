// The memory part of the compare view, for two memory-access results: each memory object,
// matched by name (its allocation site), with samples, share, loads, stores and time before
// (A) and after (B), the share's difference and the time's ratio, and its cache lines with
// false and true sharing before and after: the before/after of a fix, as `kairos compare`
// gives the run's figures above it.

import { h } from "./dom";
import { formatDiff, formatInt, formatRatio, formatShare, formatWeight } from "./format";

interface Side { samples: number; share: number; loads: number; stores: number; weight: number; false_sharing: number; true_sharing: number }
interface Counts { false_sharing: number; true_sharing: number; lines: number; samples: number }

export interface CompareObjects {
  weight_unit: [string, string];
  a: Counts;
  b: Counts;
  rows: { name: string; a: Side; b: Side; diff: number; ratio: number | null }[];
}

const HEADS: [string, boolean][] = [
  ["Object", false], ["Samples A", true], ["Samples B", true], ["Share A", true], ["Share B", true], ["Diff", true],
  ["Loads A", true], ["Loads B", true], ["Stores A", true], ["Stores B", true], ["Time A", true], ["Time B", true],
  ["Ratio B/A", true], ["False-sharing lines", true], ["True-sharing lines", true],
];

/** The section, or null when the two results are not both memory-access ones. */
export function compareObjects(o: CompareObjects | null | undefined): HTMLElement | null {
  if (!o) return null;
  const [ua, ub] = o.weight_unit;
  const tr = h("tr");
  for (const [x, num] of HEADS) tr.append(h("th", { class: num ? "num" : "", text: x }));
  const body = h("tbody");
  for (const r of o.rows) {
    const num = (text: string, cls = ""): HTMLElement => h("td", { class: "num " + cls, text });
    const diffCls = r.diff > 0 ? "worse" : r.diff < 0 ? "better" : "";
    const lines = (k: "false_sharing" | "true_sharing"): HTMLElement =>
      num(`${r.a[k]} → ${r.b[k]}`, `${k.replace("_", "-")} ${r.a[k] > r.b[k] ? "better" : r.a[k] < r.b[k] ? "worse" : ""}`);
    body.append(h("tr", { "data-object": r.name },
      h("th", { text: r.name, title: r.name }),
      num(formatInt(r.a.samples)), num(formatInt(r.b.samples)), num(formatShare(r.a.share)), num(formatShare(r.b.share)),
      num(formatDiff(r.diff), "diff " + diffCls), num(formatInt(r.a.loads)), num(formatInt(r.b.loads)),
      num(formatInt(r.a.stores)), num(formatInt(r.b.stores)), num(formatWeight(r.a.weight, ua)), num(formatWeight(r.b.weight, ub)),
      num(formatRatio(r.ratio), "ratio"), lines("false_sharing"), lines("true_sharing")));
  }
  const verdicts = h("p", { id: "compare-verdicts", class: "note",
    "data-false-sharing": `${o.a.false_sharing}-${o.b.false_sharing}`, "data-true-sharing": `${o.a.true_sharing}-${o.b.true_sharing}`,
    text: `Cache lines with false sharing: ${o.a.false_sharing} in A, ${o.b.false_sharing} in B; with true sharing: ${o.a.true_sharing} in A, ${o.b.true_sharing} in B (of ${formatInt(o.a.lines)} and ${formatInt(o.b.lines)} lines sampled).` });
  const note = h("p", { class: "note", text: `Objects are matched by name (allocation site, static variable, mapping); share is of each result's sampled ${ua === ub ? ua === "ns" ? "time" : ua : "weight"}; the ratio is of time (or cycles), B over A; rows by descending |share difference|.` });
  return h("section", { id: "compare-objects", "data-rows": String(o.rows.length) },
    h("h3", { text: "Memory objects, before (A) and after (B)" }), verdicts,
    h("div", { style: "overflow-x: auto" }, h("table", { class: "grid compare-objects" }, h("thead", {}, tr), body)), note);
}
