// Counters of system-overview results: a line chart per series over the view (or selection), a histogram per histogram.

import { Latest, debounced, errorText } from "./api";
import { CHART_H, PAD_L, frame, polyline, setupCanvas, timeLabels } from "./chart";
import { byId, clear, h, showError } from "./dom";
import { formatInt, formatNumber, formatTime } from "./format";
import type { Store } from "./state";
import type { CountersAnswer, Histogram, Range, Series } from "./types";
import { shows, VIEWS } from "./views";

export class Counters {
  private readonly el = byId("counters");
  private latest = new Latest();
  readonly schedule = debounced(() => this.refresh(), 60);

  constructor(private readonly store: Store) {}

  private range(): Range { return this.store.selection ?? this.store.view; }

  async refresh(): Promise<void> {
    this.el.hidden = !shows(VIEWS.counters, this.store);
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
    timeLabels(ctx, r, pw, ph);
    polyline(ctx, s.values, top, pw, ph, "#2a6fdb");
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
