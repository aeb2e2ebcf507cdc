// The memory-bandwidth section of a result: DRAM bandwidth over the run in GB/s (all domains,
// and each domain) with the platform maximum as a line and a share axis on the right, the
// utilization histogram (time spent at each level), and average and peak per domain and flow;
// or the sentence saying why the result has no bandwidth timeline.

import { Latest, errorText } from "./api";
import { CHART_H, PAD_L, frame, setupCanvas, timeLabels } from "./chart";
import { colorOf } from "./colors";
import { byId, clear, h, showError } from "./dom";
import { formatShare } from "./format";
import type { Store } from "./state";

/** [start ns from the result's start, duration ns, GB/s]. */
type Tick = [number, number, number];

export interface BandwidthAnswer {
  available: boolean;
  why?: string;
  source?: string;
  domain?: string;
  tick_ms?: number;
  maximum?: { gbs: number; how: string } | null;
  reference?: { gbs: number; what: string } | null;
  high_share?: number;
  dram?: Tick[];
  series?: { domain: number; flow: string; points: Tick[] }[];
  histogram?: { from: number; to: number; seconds: number }[];
  stats?: { domain: string; flow: string; average: number; peak: number; maximum: number | null }[];
  notes?: string[];
}

const PAD_R = 56;
const gbs = (v: number): string => v.toFixed(v >= 100 ? 0 : 1);

/** Each domain's DRAM traffic per tick (read + write, or MBM's total). */
function domainDram(d: BandwidthAnswer): Map<number, Map<number, Tick>> {
  const out = new Map<number, Map<number, Tick>>();
  for (const s of d.series ?? []) {
    if (!["read", "write", "total"].includes(s.flow)) continue;
    const m = out.get(s.domain) ?? new Map<number, Tick>();
    for (const [t, dur, v] of s.points) {
      const e = m.get(t);
      m.set(t, e ? [t, dur, e[2] + v] : [t, dur, v]);
    }
    out.set(s.domain, m);
  }
  return out;
}

function drawTimeline(c: HTMLCanvasElement, d: BandwidthAnswer): void {
  const ctx = setupCanvas(c, CHART_H + 30);
  const dram = d.dram ?? [];
  if (!ctx || !dram.length) return;
  const pw = Math.max(10, c.clientWidth - PAD_L - PAD_R), ph = CHART_H;
  const peak = Math.max(...dram.map(x => x[2]));
  const max = d.maximum?.gbs ?? null;
  const top = Math.max(peak, max ?? 0) * 1.05 || 1;
  const from = dram[0]![0], to = dram[dram.length - 1]![0] + dram[dram.length - 1]![1];
  frame(ctx, `${gbs(top)} GB/s`, pw, ph);
  timeLabels(ctx, { from, to }, pw, ph);
  const x = (t: number): number => PAD_L + ((t - from) / Math.max(1, to - from)) * pw;
  const y = (v: number): number => 4 + ph - (v / top) * ph;
  const line = (ticks: Tick[], color: string, width: number): void => {
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.beginPath();
    ticks.forEach(([t, dur, v], i) => { const px = x(t + dur / 2); if (i) ctx.lineTo(px, y(v)); else ctx.moveTo(px, y(v)); });
    ctx.stroke();
    ctx.lineWidth = 1;
  };
  const domains = domainDram(d);
  if (domains.size > 1) for (const [dom, m] of domains) line([...m.values()].sort((a, b) => a[0] - b[0]), colorOf(`bandwidth domain ${dom}`), 1);
  line(dram, "#1f4e9c", 2);
  // The share axis on the right: 0 to 100% of the reference (the maximum, else the peak).
  const ref = d.reference?.gbs ?? 0;
  ctx.fillStyle = "#3b4252";
  ctx.textBaseline = "middle";
  if (ref > 0) {
    for (const f of [0, 0.5, 1]) if (f * ref <= top) ctx.fillText(formatShare(f), PAD_L + pw + 6, y(f * ref));
  }
  if (max !== null) {
    ctx.strokeStyle = "#b8312f";
    ctx.setLineDash([5, 4]);
    ctx.beginPath();
    ctx.moveTo(PAD_L, y(max));
    ctx.lineTo(PAD_L + pw, y(max));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#b8312f";
    ctx.fillText(`maximum ${gbs(max)} GB/s`, PAD_L + 6, y(max) - 8);
  }
  c.dataset["ticks"] = String(dram.length);
  c.dataset["peak"] = peak.toFixed(3);
  c.dataset["maximum"] = max === null ? "" : max.toFixed(3);
}

function drawHistogram(c: HTMLCanvasElement, d: BandwidthAnswer): void {
  const ctx = setupCanvas(c, CHART_H + 30);
  const bins = d.histogram ?? [];
  if (!ctx || !bins.length) return;
  const pw = Math.max(10, c.clientWidth - PAD_L - PAD_R), ph = CHART_H;
  const total = bins.reduce((a, b) => a + b.seconds, 0) || 1;
  const top = Math.max(...bins.map(b => b.seconds / total)) || 1;
  frame(ctx, formatShare(top) + " of time", pw, ph);
  const w = pw / bins.length;
  bins.forEach((b, i) => {
    const hgt = (b.seconds / total / top) * ph;
    ctx.fillStyle = "#4f7cc4";
    ctx.fillRect(PAD_L + i * w + 1, 4 + ph - hgt, w - 2, hgt);
    ctx.fillStyle = "#3b4252";
    ctx.textBaseline = "top";
    ctx.fillText(`${gbs(b.from)}`, PAD_L + i * w + 2, ph + 8);
  });
  c.dataset["bins"] = String(bins.length);
}

function statsTable(d: BandwidthAnswer): HTMLElement {
  const heads = ["Domain", "Flow", "Average (GB/s)", "Peak (GB/s)", "Average of max", "Peak of max"];
  const tr = h("tr");
  heads.forEach((x, i) => tr.append(h("th", { class: i >= 2 ? "num" : "", text: x })));
  const body = h("tbody");
  for (const r of d.stats ?? []) {
    const of = (v: number): string => (r.maximum ? formatShare(v / r.maximum) : "—");
    body.append(h("tr", { "data-domain": r.domain, "data-flow": r.flow },
      h("td", { text: r.domain === "all" ? "all" : `${d.domain ?? "domain"} ${r.domain}` }), h("td", { text: r.flow }),
      h("td", { class: "num", text: r.average.toFixed(2) }), h("td", { class: "num", text: r.peak.toFixed(2) }),
      h("td", { class: "num", text: of(r.average) }), h("td", { class: "num", text: of(r.peak) })));
  }
  return h("table", { id: "bandwidth-stats", class: "grid" }, h("thead", {}, tr), body);
}

export class BandwidthView {
  private readonly el: HTMLElement;
  private latest = new Latest();
  private data: BandwidthAnswer | null = null;

  constructor(private readonly store: Store) {
    // Its own section after the memory-access one, so that the page's HTML stays as it is.
    this.el = h("section", { id: "bandwidth", class: "panel", hidden: true });
    byId("memory").after(this.el);
    window.addEventListener("resize", () => this.draw());
  }

  private shown(): boolean {
    const res = this.store.result;
    const views = res?.views;
    return !!res?.ok && (!views || views.includes("memory-access")) && this.store.mode === "result";
  }

  async refresh(): Promise<void> {
    this.el.hidden = !this.shown();
    if (this.el.hidden) { this.latest.cancel(); this.data = null; return; }
    try {
      const d = await this.latest.get<BandwidthAnswer>("bandwidth", { r: this.store.r });
      if (!d) return;
      this.data = d;
      this.render(d);
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }

  private render(d: BandwidthAnswer): void {
    clear(this.el);
    this.el.append(h("h2", { text: "Memory bandwidth" }));
    this.el.dataset["available"] = String(d.available);
    const max = d.maximum ? `Maximum: ${gbs(d.maximum.gbs)} GB/s (${d.maximum.how}).` : "No maximum is stored for this host: run `kairos measure bandwidth` on it; shares are of the peak.";
    if (!d.available) {
      this.el.append(h("p", { id: "bandwidth-why", class: "note", text: `No bandwidth timeline: ${d.why ?? "unknown"}.` }), h("p", { class: "note", text: max }));
      return;
    }
    this.el.append(
      h("p", { id: "bandwidth-source", class: "note", text: `${d.source ?? ""}; one point per ${d.tick_ms ?? 0} ms and ${d.domain ?? "domain"}. ${max}` }),
      h("figure", {}, h("figcaption", { text: "DRAM bandwidth, all domains (thick) and each domain, GB/s; right axis: share of " + (d.reference?.what ?? "the maximum") }),
        h("canvas", { id: "bandwidth-timeline", class: "counter-chart", "aria-label": "DRAM bandwidth over time" })),
      h("figure", {}, h("figcaption", { text: "Bandwidth utilization histogram: time spent at each level (bins of " + (d.reference?.what ?? "the maximum") + ", GB/s at each bin's start)" }),
        h("canvas", { id: "bandwidth-histogram", class: "counter-chart", "aria-label": "time spent at each bandwidth level" })),
      statsTable(d));
    for (const n of d.notes ?? []) this.el.append(h("p", { class: "note", text: n }));
    this.draw();
  }

  private draw(): void {
    if (!this.data?.available || this.el.hidden) return;
    const t = this.el.querySelector<HTMLCanvasElement>("#bandwidth-timeline"), hi = this.el.querySelector<HTMLCanvasElement>("#bandwidth-histogram");
    if (t) drawTimeline(t, this.data);
    if (hi) drawHistogram(hi, this.data);
  }
}
