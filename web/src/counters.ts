// Counters of system-overview results: a line chart per series over the view (or selection), a histogram per histogram.

import { Latest, debounced, errorText } from "./api";
import { ticks } from "./axis";
import { byId, clear, h, showError } from "./dom";
import { formatInt, formatNumber, formatTick, formatTime } from "./format";
import type { Store } from "./state";
import type { CountersAnswer, Histogram, Range, Series } from "./types";

const CHART_H = 110;
const PAD_L = 70;

function setupCanvas(c: HTMLCanvasElement, cssH: number): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth || 600;
  c.width = Math.round(w * dpr);
  c.height = Math.round(cssH * dpr);
  c.style.height = cssH + "px";
  const ctx = c.getContext("2d");
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** A chart's box with its y labels (the top value and 0); leaves the label style set. */
function frame(ctx: CanvasRenderingContext2D, top: string, pw: number, ph: number): void {
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = "#3b4252";
  ctx.textBaseline = "middle";
  ctx.fillText(top, 4, 8);
  ctx.fillText("0", 4, 4 + ph);
  ctx.strokeStyle = "#c9ced8";
  ctx.strokeRect(PAD_L + 0.5, 4.5, pw, ph);
}

export class Counters {
  private readonly el = byId("counters");
  private latest = new Latest();
  readonly schedule = debounced(() => this.refresh(), 60);

  constructor(private readonly store: Store) {}

  private range(): Range { return this.store.selection ?? this.store.view; }

  async refresh(): Promise<void> {
    const res = this.store.result;
    this.el.hidden = !(res?.ok && res.has_counters) || this.store.mode !== "result";
    if (this.el.hidden) { this.latest.cancel(); return; }
    const r = this.range();
    const width = Math.max(1, Math.min(4096, Math.round((this.el.clientWidth || 800) - PAD_L - 20)));
    try {
      const d = await this.latest.get<CountersAnswer>("counters", { r: this.store.r, from: Math.floor(r.from), to: Math.ceil(r.to), width });
      if (d) this.render(d, r);
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }

  private render(d: CountersAnswer, r: Range): void {
    clear(this.el);
    this.el.append(h("h2", { text: `Counters over ${formatTime(r.from)} – ${formatTime(r.to)}` }));
    if (!d.series.length && !d.histograms.length) this.el.append(h("p", { class: "note", text: "This result has no counter values in this range." }));
    const grid = h("div", { class: "counter-grid" });
    this.el.append(grid);
    for (const s of d.series) {
      const c = h("canvas", { class: "counter-chart series", "data-name": s.name });
      grid.append(h("figure", {}, h("figcaption", { text: s.name }), c));
      const ctx = setupCanvas(c, CHART_H);
      if (ctx) this.drawSeries(ctx, c.clientWidth, s, r);
    }
    for (const hi of d.histograms) {
      const c = h("canvas", { class: "counter-chart histogram", "data-name": hi.name });
      grid.append(h("figure", {}, h("figcaption", { text: hi.name }), c));
      const ctx = setupCanvas(c, CHART_H + 20);
      if (ctx) this.drawHistogram(ctx, c.clientWidth, hi);
    }
  }

  private drawSeries(ctx: CanvasRenderingContext2D, W: number, s: Series, r: Range): void {
    const pw = W - PAD_L - 8, ph = CHART_H - 24;
    let max = 0;
    for (const v of s.values) if (v !== null && v > max) max = v;
    const top = max > 0 ? max * 1.05 : 1;
    frame(ctx, formatNumber(max), pw, ph);
    const { step, times } = ticks(r, pw, 120);
    ctx.textBaseline = "top";
    for (const t of times) {
      const x = PAD_L + ((t - r.from) / (r.to - r.from)) * pw;
      ctx.fillText(formatTick(t, step), x + 2, ph + 8);
    }
    const n = s.values.length;
    if (!n) return;
    ctx.strokeStyle = "#2a6fdb";
    ctx.fillStyle = "rgba(42, 111, 219, 0.15)";
    ctx.beginPath();
    let started = false;
    for (let i = 0; i < n; i++) {
      const v = s.values[i];
      if (v === null || v === undefined) continue;
      const x = PAD_L + ((i + 0.5) / n) * pw;
      const y = 4 + ph - (v / top) * ph;
      if (!started) { ctx.moveTo(x, y); started = true; } else ctx.lineTo(x, y);
    }
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx.lineWidth = 1;
  }

  private drawHistogram(ctx: CanvasRenderingContext2D, W: number, hi: Histogram): void {
    const pw = W - PAD_L - 8, ph = CHART_H - 24;
    const n = hi.counts.length;
    let max = 0;
    for (const c of hi.counts) if (c > max) max = c;
    frame(ctx, formatInt(max), pw, ph);
    if (!n) return;
    const bw = pw / n;
    ctx.fillStyle = "#e07b39";
    for (let i = 0; i < n; i++) {
      const bh = max > 0 ? (hi.counts[i]! / max) * ph : 0;
      ctx.fillRect(PAD_L + i * bw + 1, 4 + ph - bh, Math.max(1, bw - 2), bh);
    }
    ctx.fillStyle = "#3b4252";
    ctx.textBaseline = "top";
    const every = Math.max(1, Math.ceil(n / Math.max(1, pw / 70)));
    for (let i = 0; i <= n; i += every) {
      const e = hi.edges[i];
      if (e === undefined) continue;
      ctx.fillText(formatNumber(e), PAD_L + i * bw + 2, ph + 8);
    }
  }
}
