// The memory-bandwidth section of a result: DRAM bandwidth in GB/s (all domains, and each
// domain or, at the reader's choice, each memory channel) with the platform maximum as a line
// and a share axis on the right, the utilization histogram (time spent at each level),
// average and peak per domain, flow and channel, and the objects and functions the bandwidth
// comes from; all of the timeline's range or selection, as the other views. Or the sentence
// saying why the result has no bandwidth timeline.

import { Latest, debounced, errorText } from "./api";
import { type BandwidthAnswer, type Tick, channelTable, objectTable, statsTable } from "./bandwidth-tables";
import { CHART_H, PAD_L, frame, setupCanvas, timeLabels } from "./chart";
import { colorOf } from "./colors";
import { byId, clear, h, showError } from "./dom";
import { formatShare, formatTime } from "./format";
import type { Store } from "./state";
import type { Range } from "./types";
import { shows, VIEWS } from "./views";

export type { BandwidthAnswer } from "./bandwidth-tables";

const PAD_R = 56;
const gbs = (v: number): string => v.toFixed(v >= 100 ? 0 : 1);

/** DRAM traffic per tick (read + write, or MBM's total) of each key: a domain, or a channel. */
function dramBy<S extends { flow: string; points: Tick[] }>(series: S[], key: (s: S) => string): Map<string, Tick[]> {
  const out = new Map<string, Map<number, Tick>>();
  for (const s of series) {
    if (!["read", "write", "total"].includes(s.flow)) continue;
    const m = out.get(key(s)) ?? new Map<number, Tick>();
    for (const [t, dur, v] of s.points) {
      const e = m.get(t);
      m.set(t, e ? [t, dur, e[2] + v] : [t, dur, v]);
    }
    out.set(key(s), m);
  }
  return new Map([...out].map(([k, m]) => [k, [...m.values()].sort((a, b) => a[0] - b[0])]));
}

function drawTimeline(c: HTMLCanvasElement, d: BandwidthAnswer, channels: boolean): void {
  const ctx = setupCanvas(c, CHART_H + 30);
  const dram = d.dram ?? [];
  if (!ctx || !dram.length) return;
  const pw = Math.max(10, c.clientWidth - PAD_L - PAD_R), ph = CHART_H;
  const peak = Math.max(...dram.map(x => x[2]));
  const max = d.maximum?.gbs ?? null;
  const top = Math.max(peak, max ?? 0) * 1.05 || 1;
  // The range asked for (the timeline's), else the ticks' own extent.
  const from = d.range?.[0] ?? dram[0]![0], to = d.range?.[1] ?? dram[dram.length - 1]![0] + dram[dram.length - 1]![1];
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
  ctx.save();
  ctx.beginPath();
  ctx.rect(PAD_L, 0, pw, ph + 6);
  ctx.clip();
  const thin = channels ? dramBy(d.channels ?? [], s => `${s.domain}/${s.channel}`) : dramBy(d.series ?? [], s => String(s.domain));
  if (thin.size > 1 || channels) for (const [k, ticks] of thin) line(ticks, colorOf(`bandwidth ${channels ? "channel" : "domain"} ${k}`), 1);
  line(dram, "#1f4e9c", 2);
  ctx.restore();
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
  c.dataset["drawn"] = channels ? "channels" : "domains";
  c.dataset["lines"] = String(thin.size > 1 || channels ? thin.size : 0);
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

export class BandwidthView {
  private readonly el: HTMLElement;
  private latest = new Latest();
  private data: BandwidthAnswer | null = null;
  /** Channels drawn instead of domains: the reader's choice, kept across ranges. */
  private channels = false;
  private readonly schedule = debounced(() => this.refresh(), 60);

  constructor(private readonly store: Store) {
    // Its own section after the memory-access one, so that the page's HTML stays as it is.
    this.el = h("section", { id: "bandwidth", class: "panel", hidden: true });
    byId("memory").after(this.el);
    window.addEventListener("resize", () => this.draw());
    // Follows the timeline's range and selection as the memory series do.
    store.on("view", () => { if (!store.selection && !this.el.hidden) this.schedule(); });
    store.on("selection", () => { if (!this.el.hidden) this.schedule(); });
  }

  /** from/to of the selection, else of the timeline's range; none when that is the whole run. */
  private range(): Range | null {
    const r = this.store.selection ?? this.store.view, full = this.store.full;
    return this.store.selection || r.from > full.from || r.to < full.to ? r : null;
  }

  private shown(): boolean { return shows(VIEWS.bandwidth, this.store); }

  async refresh(): Promise<void> {
    this.el.hidden = !this.shown();
    if (this.el.hidden) { this.latest.cancel(); this.data = null; return; }
    try {
      const r = this.range();
      const d = await this.latest.get<BandwidthAnswer>("bandwidth", r ? { r: this.store.r, from: Math.floor(r.from), to: Math.ceil(r.to) } : { r: this.store.r });
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
    this.el.dataset["range"] = d.range ? `${d.range[0]}-${d.range[1]}` : "";
    const objects = d.by_object ? objectTable(d.by_object) : null;
    if (!d.available) {
      this.el.append(h("p", { id: "bandwidth-why", class: "note", text: `No bandwidth timeline: ${d.why ?? "unknown"}.` }), h("p", { class: "note", text: max }));
      if (objects) this.el.append(objects);
      return;
    }
    const hasChannels = (d.channels ?? []).length > 0;
    if (!hasChannels) this.channels = false;
    const of = d.range ? `, ${formatTime(d.range[0])} – ${formatTime(d.range[1])} (the ${d.dram?.length ?? 0} ticks that overlap it)` : ", the whole timeline";
    const toggle = h("input", { type: "checkbox", id: "bandwidth-channels", checked: this.channels });
    toggle.addEventListener("change", () => { this.channels = toggle.checked; this.draw(); });
    const parts: (HTMLElement | null)[] = [
      h("p", { id: "bandwidth-source", class: "note", text: `${d.source ?? ""}; one point per ${d.tick_ms ?? 0} ms and ${d.domain ?? "domain"}. ${max}` }),
      hasChannels ? h("label", { class: "note" }, toggle, ` Draw memory channels instead of ${d.domain ?? "domain"}s`) : null,
      h("figure", {}, h("figcaption", { id: "bandwidth-caption", text: `DRAM bandwidth${of}: all domains (thick) and each ${d.domain ?? "domain"} or channel, GB/s; right axis: share of ` + (d.reference?.what ?? "the maximum") }),
        h("canvas", { id: "bandwidth-timeline", class: "counter-chart", "aria-label": "DRAM bandwidth over time" })),
      h("figure", {}, h("figcaption", { text: "Bandwidth utilization histogram: time spent at each level (bins of " + (d.reference?.what ?? "the maximum") + ", GB/s at each bin's start)" }),
        h("canvas", { id: "bandwidth-histogram", class: "counter-chart", "aria-label": "time spent at each bandwidth level" })),
      statsTable(d),
      hasChannels ? channelTable(d) : null,
      objects];
    for (const p of parts) if (p) this.el.append(p);
    for (const n of d.notes ?? []) this.el.append(h("p", { class: "note", text: n }));
    this.draw();
  }

  private draw(): void {
    if (!this.data?.available || this.el.hidden) return;
    const t = this.el.querySelector<HTMLCanvasElement>("#bandwidth-timeline"), hi = this.el.querySelector<HTMLCanvasElement>("#bandwidth-histogram");
    if (t) drawTimeline(t, this.data, this.channels);
    if (hi) drawHistogram(hi, this.data);
  }
}
