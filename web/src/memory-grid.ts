// Pictures of memory-access results: a cache line's bytes by thread (false sharing shows as
// threads on disjoint cells of one line) and the top objects' samples over time.

import { CHART_H, PAD_L, frame, polyline, setupCanvas, timeLabels } from "./chart";
import { colorOf } from "./colors";
import { h } from "./dom";
import { formatInt } from "./format";
import type { CacheLine, MemorySeries, Range } from "./types";

const LINE_BYTES = 64;

/** The CSS class of a verdict ("false sharing" -> "v-false"). */
export function verdictClass(verdict: string): string {
  return "verdict v-" + (verdict.split(" ")[0] || "none");
}

/**
 * The line's grid: columns are its 64 bytes (labelled with offsets in the object every 8 bytes),
 * rows its threads; a cell is shaded by the accesses that touched the byte, marked W when one
 * of them wrote, R when all read. Bytes outside the object (size known) are hatched.
 */
export function lineGrid(l: CacheLine, objectSize: number | null): HTMLTableElement {
  const t = h("table", { id: "memory-grid", "data-threads": l.grid.length, "aria-label": `bytes of line ${l.addr} by thread` });
  const outside = (b: number): boolean => {
    const o = l.object_offset + b;
    return o < 0 || (objectSize !== null && objectSize > 0 && o >= objectSize);
  };
  const head = h("tr", {}, h("th", { class: "tid", text: "thread \\ offset" }));
  for (let b = 0; b < LINE_BYTES; b++) {
    head.append(h("th", { class: "byte", title: `byte ${b} of the line, offset ${l.object_offset + b} in the object`, text: b % 8 === 0 ? String(l.object_offset + b) : "" }));
  }
  t.append(h("thead", {}, head));
  let max = 0;
  for (const r of l.grid) for (let b = 0; b < LINE_BYTES; b++) max = Math.max(max, (r.loads[b] ?? 0) + (r.stores[b] ?? 0));
  const body = h("tbody");
  for (const r of l.grid) {
    const ranges = r.offsets.map(([a, z]) => `${a}..${z}`).join(", ");
    const tr = h("tr", { "data-tid": r.tid },
      h("th", { class: "tid", title: `thread ${r.tid}: ${formatInt(r.load_count)} loads, ${formatInt(r.store_count)} stores at offsets ${ranges}`, text: String(r.tid) }));
    for (let b = 0; b < LINE_BYTES; b++) {
      const ld = r.loads[b] ?? 0, st = r.stores[b] ?? 0;
      const o = l.object_offset + b;
      const cell = h("td", { class: "cell" + (outside(b) ? " outside" : ""), "data-offset": o });
      if (ld + st > 0) {
        cell.classList.add("hit", st > 0 ? "w" : "r");
        cell.textContent = st > 0 ? "W" : "R";
        // Shade from a fifth (rare) to full (the busiest cell of the line).
        const a = 0.2 + 0.8 * ((ld + st) / Math.max(1, max));
        cell.style.background = st > 0 ? `rgba(192, 57, 43, ${a.toFixed(2)})` : `rgba(42, 111, 219, ${a.toFixed(2)})`;
        cell.title = `thread ${r.tid}, offset ${o} (byte ${b} of the line): ${formatInt(ld)} loads, ${formatInt(st)} stores`;
      }
      tr.append(cell);
    }
    body.append(tr);
  }
  t.append(body);
  return t;
}

/** Samples per time bucket of each top object, one coloured line each, over `r`. */
export function seriesChart(c: HTMLCanvasElement, s: MemorySeries, r: Range): void {
  const ctx = setupCanvas(c, CHART_H);
  if (!ctx) return;
  const pw = c.clientWidth - PAD_L - 8, ph = CHART_H - 24;
  let max = 0;
  for (const o of s.objects) for (const v of o.counts) max = Math.max(max, v);
  frame(ctx, formatInt(max), pw, ph);
  timeLabels(ctx, r, pw, ph);
  for (const o of s.objects) polyline(ctx, o.counts, max > 0 ? max * 1.05 : 1, pw, ph, colorOf(o.name));
  c.dataset.objects = String(s.objects.length);
  c.dataset.samples = String(s.objects.reduce((a, o) => a + o.counts.reduce((x, y) => x + y, 0), 0));
}

/** The series chart's width in buckets for a section `px` wide: one per 2 px. */
export function seriesWidth(px: number): number {
  return Math.max(1, Math.min(4096, Math.round((px - PAD_L - 8) / 2)));
}
