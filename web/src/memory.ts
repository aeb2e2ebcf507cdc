// The memory-access section: memory objects, cache lines with their verdict, the picked
// line's bytes by thread, and the top objects' samples over the timeline's range.

import { Latest, debounced, errorText } from "./api";
import { colorOf } from "./colors";
import { byId, clear, h, showError } from "./dom";
import { formatInt, formatShare, formatTime, formatWeight } from "./format";
import { lineGrid, seriesChart, seriesWidth, verdictClass } from "./memory-grid";
import type { Store } from "./state";
import { numaSection } from "./numa";
import type { CacheLine, MemoryAnswer, MemorySeries, NumaAnswer, Range } from "./types";
import { shows, VIEWS } from "./views";

type Cell = string | Node;

function table(cls: string, heads: string[], numeric: number): [HTMLTableElement, HTMLTableSectionElement] {
  const tr = h("tr");
  heads.forEach((x, i) => tr.append(h("th", { class: i >= heads.length - numeric ? "num" : "", text: x })));
  const body = h("tbody");
  return [h("table", { class: "grid " + cls }, h("thead", {}, tr), body), body];
}

function row(cells: Cell[], numeric: number): HTMLTableRowElement {
  const tr = h("tr");
  cells.forEach((c, i) => {
    const td = h("td", { class: i >= cells.length - numeric ? "num" : "" }, c);
    if (typeof c === "string") td.title = c;
    tr.append(td);
  });
  return tr;
}

function swatch(name: string): HTMLSpanElement {
  const s = h("span", { class: "swatch" });
  s.style.background = colorOf(name);
  return s;
}

export class MemoryView {
  private readonly el = byId("memory");
  private latest = new Latest();
  private latestSeries = new Latest();
  private latestNuma = new Latest();
  private data: MemoryAnswer | null = null;
  /** The picked line, by address, so that it stays picked when the answer is fetched again. */
  private picked = "";
  readonly schedule = debounced(() => this.refreshSeries(), 60);

  constructor(private readonly store: Store) {}

  private range(): Range { return this.store.selection ?? this.store.view; }

  private params(width: number): Record<string, number> {
    const r = this.range();
    return { r: this.store.r, from: Math.floor(r.from), to: Math.ceil(r.to), width };
  }

  private shown(): boolean { return shows(VIEWS.memory, this.store); }

  async refresh(): Promise<void> {
    this.el.hidden = !this.shown();
    if (this.el.hidden) { this.latest.cancel(); this.latestSeries.cancel(); this.latestNuma.cancel(); this.data = null; return; }
    try {
      const d = await this.latest.get<MemoryAnswer>("memory", this.params(seriesWidth(this.el.clientWidth / 2)));
      if (!d) return;
      this.data = d;
      if (!d.lines.some(l => l.addr === this.picked)) this.picked = (d.lines.find(l => l.verdict !== "none") ?? d.lines[0])?.addr ?? "";
      this.render(d);
    } catch (e) {
      this.data = null;
      showError(this.el, errorText(e));
      return;
    }
    await this.loadNuma();
  }

  /** The NUMA part: placement, first touch and problems (it does not follow the time range). */
  private async loadNuma(): Promise<void> {
    const box = this.el.querySelector<HTMLElement>("#numa-box");
    if (!box) return;
    try {
      const n = await this.latestNuma.get<NumaAnswer>("numa", { r: this.store.r });
      if (!n) return;
      clear(box);
      const [section, draw] = numaSection(n);
      box.append(section);
      draw();
    } catch (e) {
      showError(box, errorText(e));
    }
  }

  /** Only the time series, for the timeline's new range. */
  async refreshSeries(): Promise<void> {
    const c = this.el.querySelector<HTMLCanvasElement>("#memory-series");
    if (!this.data || this.el.hidden || !c) return;
    try {
      const d = await this.latestSeries.get<{ series: MemorySeries }>("memory", { ...this.params(seriesWidth(c.clientWidth)), part: "series" });
      if (!d || !this.data) return;
      this.data.series = d.series;
      this.drawSeries(c, d.series);
    } catch (e) {
      showError(byId("memory-series-error"), errorText(e));
    }
  }

  private render(d: MemoryAnswer): void {
    clear(this.el);
    const unresolved = d.unresolved.reduce((a, [, n]) => a + n, 0);
    this.el.append(
      h("h2", { text: "Memory access" }),
      h("p", { class: "note", title: d.source_reason, text: `${d.source_name}: ${formatInt(d.samples)} samples with a data address, ${formatInt(unresolved)} without.` +
        (d.watch_hits ? ` ${formatInt(d.watch_hits)} watchpoint hits besides (exact accesses, not samples: counted apart).` : "") + (d.source === "registers" ? " Weights are CPU time at the access, not latency." : "") }),
      h("p", { id: "memory-verdicts" },
        h("span", { class: verdictClass(d.false_sharing_lines ? "false" : "none"), text: `${formatInt(d.false_sharing_lines)} cache line${d.false_sharing_lines === 1 ? "" : "s"} with false sharing` }),
        `, ${formatInt(d.true_sharing_lines)} with true sharing, of ${formatInt(d.lines_total)} lines (${formatInt(d.shared_lines)} used by more than one thread).`));
    const top = h("div", { class: "memory-top" });
    top.append(this.objects(d));
    const c = h("canvas", { id: "memory-series", class: "counter-chart", "aria-label": "samples per object over time" });
    const legend = h("div", { class: "legend" });
    for (const o of d.series.objects) legend.append(h("span", {}, swatch(o.name), o.name));
    top.append(h("figure", {}, h("figcaption", { id: "memory-series-caption" }), h("div", { id: "memory-series-error" }), c, legend));
    this.el.append(top, this.lines(d), h("div", { id: "memory-line" }), h("div", { id: "numa-box" }));
    this.drawSeries(c, d.series);
    this.showLine();
  }

  private drawSeries(c: HTMLCanvasElement, s: MemorySeries): void {
    clear(byId("memory-series-error"));
    byId("memory-series-caption").textContent = `Samples per object, ${formatTime(s.from)} – ${formatTime(s.to)}`;
    seriesChart(c, s, { from: s.from, to: s.to });
  }

  private objects(d: MemoryAnswer): HTMLElement {
    const names: Record<string, string> = { ns: "Time", cycles: "Latency (cycles)", hits: "Hits", events: "Events" };
    const weight = names[d.weight_unit] ?? "Weight";
    const [t, body] = table("memory-objects", ["Object", "Kind", "Samples", "Share", weight, "Loads", "Stores", "Threads"], 6);
    for (const o of d.objects) {
      body.append(row([h("span", {}, swatch(o.name), o.name), o.kind ?? "", formatInt(o.samples), formatShare(o.share),
        formatWeight(o.weight, d.weight_unit), formatInt(o.loads), formatInt(o.stores), formatInt(o.threads)], 6));
    }
    const more = d.objects_total > d.objects.length ? ` (the first ${d.objects.length} of ${formatInt(d.objects_total)})` : "";
    return h("div", {}, h("h3", { text: "Memory objects" + more }), t);
  }

  private lines(d: MemoryAnswer): HTMLElement {
    const [t, body] = table("memory-lines", ["Line", "Object", "Offsets", "Verdict", "Functions", "Threads", "Samples", "Share", "Loads", "Stores"], 5);
    for (const l of d.lines) {
      const tr = row([l.addr, l.object_name, `${l.object_offset}..${l.object_offset + 63}`, h("span", { class: verdictClass(l.verdict), text: l.verdict }),
        l.functions.join(", "), formatInt(l.threads_total), formatInt(l.samples), formatShare(l.share), formatInt(l.loads), formatInt(l.stores)], 5);
      tr.dataset.addr = l.addr;
      tr.tabIndex = 0;
      tr.addEventListener("click", () => this.pick(l.addr));
      tr.addEventListener("keydown", e => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); this.pick(l.addr); } });
      body.append(tr);
    }
    if (!d.lines.length) body.append(h("tr", {}, h("td", { colspan: 10, class: "empty", text: "No sampled access had a data address." })));
    const more = d.lines_total > d.lines.length ? ` (the first ${d.lines.length} of ${formatInt(d.lines_total)})` : "";
    return h("div", {}, h("h3", { text: "Cache lines, shared ones first" + more + ": click one to see its bytes by thread" }), t);
  }

  private pick(addr: string): void {
    this.picked = addr;
    this.showLine();
  }

  /** The picked line: verdict, fix and the grid of its bytes by thread. */
  private showLine(): void {
    const box = this.el.querySelector<HTMLElement>("#memory-line");
    if (!box || !this.data) return;
    clear(box);
    for (const tr of this.el.querySelectorAll<HTMLElement>("table.memory-lines tbody tr")) tr.classList.toggle("selected", tr.dataset.addr === this.picked);
    const l: CacheLine | undefined = this.data.lines.find(x => x.addr === this.picked);
    if (!l) return;
    box.dataset.addr = l.addr;
    const size = this.data.objects.find(o => o.id === l.object)?.size ?? null;
    const fix = l.fix ? h("p", { id: "memory-fix", class: "fix", text: "Fix: " + l.fix }) : "";
    box.append(
      h("h3", { text: `Line ${l.addr} of ${l.object_name}: offsets ${l.object_offset}..${l.object_offset + 63}, bytes by thread` }),
      h("p", {}, h("span", { id: "memory-verdict", class: verdictClass(l.verdict), text: l.verdict }),
        ` · ${formatInt(l.samples)} samples (${formatWeight(l.weight, this.data.weight_unit)}) by ${formatInt(l.threads_total)} thread${l.threads_total === 1 ? "" : "s"}` +
        (l.functions.length ? ` in ${l.functions.join(", ")}` : "")),
      fix,
      h("div", { class: "memory-grid-wrap" }, lineGrid(l, size)),
      h("p", { class: "note", text: "A cell is a byte of the line (labels: offsets in the object); R: read, W: written; the darker, the more sampled accesses touched it. " +
        "Threads on different bytes of one line, one of them writing, at the same time: false sharing." +
        (l.threads_total > l.grid.length ? ` The first ${l.grid.length} of ${l.threads_total} threads are shown.` : "") }));
  }
}
