// The timeline: one lane per thread or CPU on a canvas, fetched per view (debounced, stale requests aborted).
// With a second method chosen, every lane is drawn twice, once per method, one above the
// other (the paper's figure 12: the same recording under two time assignments).

import { Latest, errorText, hold } from "./api";
import { drawAxis, ticks } from "./axis";
import { colorOf } from "./colors";
import { byId, clear, showError } from "./dom";
import { formatInt, formatTime } from "./format";
import type { Store } from "./state";
import type { Lane, Range, TimelineAnswer } from "./types";

export const LABEL_W = 180;
export const LANE_H = 20;

/** A point of a lane under the pointer, for the tooltip. */
export interface Hit { lane: Lane; t: number; func: string | null; module: string | null; count: number; weight: number }

export class Timeline {
  readonly canvas = byId<HTMLCanvasElement>("timeline");
  private readonly axis = byId<HTMLCanvasElement>("timeline-axis");
  private readonly errorBox = byId("timeline-error");
  private data: TimelineAnswer | null = null;
  /** The same view under the second method, when one is chosen. */
  private data2: TimelineAnswer | null = null;
  private merged: Lane[] = [];
  /** The method of each drawn lane (lanes of the second method are copies). */
  private laneMethod = new WeakMap<Lane, string>();
  private names = new Map<number, [string, string]>();
  private latest = new Latest();
  private latest2 = new Latest();
  private timer: number | undefined;
  private release: (() => void) | null = null;
  /** Selection being dragged (not yet in the store). */
  dragSel: Range | null = null;
  /** Time and lane of the sample shown in the inspector. */
  marker: { key: string; t: number } | null = null;

  constructor(private readonly store: Store) {
    let lastWidth = -1;
    new ResizeObserver(entries => {
      const w = Math.round(entries[0]?.contentRect.width ?? 0);
      if (w === lastWidth) return; // height changes come from our own drawing
      const first = lastWidth < 0;
      lastWidth = w;
      if (first) { requestAnimationFrame(() => this.draw()); return; }
      requestAnimationFrame(() => { this.draw(); this.schedule(); });
    }).observe(byId("timeline-wrap"));
  }

  get plotWidth(): number { return Math.max(10, this.canvas.clientWidth - LABEL_W); }
  get lanes(): Lane[] { return this.merged; }

  /** The second method, when it differs from the first and the result has it. */
  private get method2(): string | null {
    const m2 = this.store.method2, res = this.store.result;
    return m2 && m2 !== this.store.method && res?.methods?.includes(m2) ? m2 : null;
  }

  /** Lanes to draw: the answer's, or each lane under both methods, labelled with the method. */
  private merge(): void {
    const d = this.data, d2 = this.data2, m2 = this.method2;
    if (!d || !d2 || !m2) { this.merged = d?.lanes ?? []; return; }
    const other = new Map(d2.lanes.map(l => [l.key, l]));
    const empty = (l: Lane): Lane => ({ ...l, bucket: [], count: [], weight: [], func: [] });
    this.merged = d.lanes.flatMap(l => {
      const a = { ...l, label: `${this.store.method}: ${l.label}` };
      const b = { ...(other.get(l.key) ?? empty(l)), label: `${m2}: ${l.label}` };
      this.laneMethod.set(b, m2);
      return [a, b];
    });
  }

  xOf(t: number): number {
    const v = this.store.view;
    return LABEL_W + ((t - v.from) / (v.to - v.from)) * this.plotWidth;
  }

  tOf(x: number): number {
    const v = this.store.view;
    return v.from + ((x - LABEL_W) / this.plotWidth) * (v.to - v.from);
  }

  laneAt(y: number): Lane | null {
    const i = Math.floor(y / LANE_H);
    return i >= 0 && i < this.lanes.length ? this.lanes[i]! : null;
  }

  /** Forgets the picture (another result or lane mode) and fetches anew. */
  reset(): void {
    this.data = null;
    this.data2 = null;
    this.merged = [];
    this.marker = null;
    this.draw();
    this.schedule();
  }

  /** Re-fetches after a short pause, so that a burst of wheel events makes one request. */
  schedule(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (!this.release) this.release = hold();
    this.timer = window.setTimeout(() => {
      this.timer = undefined;
      const release = this.release;
      this.release = null;
      void this.fetch().finally(() => release?.());
    }, 50);
  }

  private async fetch(): Promise<void> {
    const res = this.store.result;
    if (!res || !res.ok) { this.latest.cancel(); return; }
    const v = this.store.view;
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.min(4096, Math.round(this.plotWidth * dpr)));
    const params = {
      r: this.store.r, from: Math.floor(v.from), to: Math.ceil(v.to), width,
      lanes: this.store.laneMode, tids: this.store.tidsParam,
    };
    const m2 = this.method2;
    try {
      const [d, d2] = await Promise.all([
        this.latest.get<TimelineAnswer>("timeline", { ...params, method: this.store.methodParam }),
        m2 ? this.latest2.get<TimelineAnswer>("timeline", { ...params, method: m2 === "none" ? undefined : m2 }) : Promise.resolve(null),
      ]);
      if (!d || (m2 && !d2)) return;
      clear(this.errorBox);
      this.data = d;
      this.data2 = d2;
      this.names.clear();
      for (const a of d2 ? [d, d2] : [d]) {
        a.functions.id.forEach((id, i) => this.names.set(id, [a.functions.name[i] ?? "?", a.functions.module[i] ?? ""]));
      }
      this.merge();
      this.draw();
    } catch (e) {
      showError(this.errorBox, errorText(e));
    }
  }

  hitAt(x: number, y: number): Hit | null {
    const lane = this.laneAt(y);
    const d = this.data;
    if (!lane || !d || x < LABEL_W) return null;
    const t = this.tOf(x);
    const b = Math.floor((t - d.from) / d.bucket_ns);
    let lo = 0, hi = lane.bucket.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = lane.bucket[mid]!;
      if (v === b) { found = mid; break; }
      if (v < b) lo = mid + 1; else hi = mid - 1;
    }
    if (found < 0) return { lane, t, func: null, module: null, count: 0, weight: 0 };
    const n = this.names.get(lane.func[found]!);
    return { lane, t, func: n?.[0] ?? null, module: n?.[1] ?? null, count: lane.count[found]!, weight: lane.weight[found]! };
  }

  private sizeCanvas(c: HTMLCanvasElement, cssH: number): CanvasRenderingContext2D | null {
    const dpr = window.devicePixelRatio || 1;
    const cssW = c.clientWidth || c.parentElement?.clientWidth || 800;
    c.style.height = cssH + "px";
    const w = Math.round(cssW * dpr), hh = Math.round(cssH * dpr);
    if (c.width !== w) c.width = w;
    if (c.height !== hh) c.height = hh;
    const ctx = c.getContext("2d");
    ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  draw(): void {
    const v = this.store.view;
    const lanes = this.lanes;
    const c = this.canvas;
    c.dataset.from = String(Math.round(v.from));
    c.dataset.to = String(Math.round(v.to));
    const real = this.data?.lanes.length ?? 0;
    c.dataset.lanes = String(real);
    c.dataset.rows = String(lanes.length);
    c.dataset.methods = this.data2 ? `${this.store.method},${this.method2 ?? ""}` : this.store.method;
    byId("lanes").textContent = `${real} ${this.store.laneMode === "cpu" ? "CPU" : "thread"} lane${real === 1 ? "" : "s"}`
      + (this.data2 ? `, each under ${this.store.method} and ${this.method2 ?? ""}` : "");
    byId("view-range").textContent = `view: ${formatTime(v.from)} – ${formatTime(v.to)} (${formatTime(v.to - v.from)})`;
    const pw = this.plotWidth;
    const actx = this.sizeCanvas(this.axis, 22);
    if (actx) {
      actx.clearRect(0, 0, this.axis.clientWidth, 22);
      drawAxis(actx, v, LABEL_W, pw, 22);
    }
    const height = Math.max(LANE_H, lanes.length * LANE_H);
    const ctx = this.sizeCanvas(c, height);
    if (!ctx) return;
    const W = c.clientWidth;
    ctx.clearRect(0, 0, W, height);
    this.drawGrid(ctx, height);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, 0, pw, height);
    ctx.clip();
    lanes.forEach((lane, i) => this.drawLane(ctx, lane, i * LANE_H));
    this.drawOverlays(ctx, height);
    ctx.restore();
    this.drawLabels(ctx, lanes);
    if (!this.data || lanes.length === 0) {
      ctx.fillStyle = "#667";
      ctx.font = "12px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.fillText(this.data ? "No samples in this range." : "loading…", LABEL_W + 8, LANE_H / 2);
    }
  }

  private drawGrid(ctx: CanvasRenderingContext2D, height: number): void {
    const { times } = ticks(this.store.view, this.plotWidth);
    ctx.strokeStyle = "#e6e9ef";
    ctx.beginPath();
    for (const t of times) {
      const x = Math.round(this.xOf(t)) + 0.5;
      ctx.moveTo(x, 0);
      ctx.lineTo(x, height);
    }
    for (let i = 1; i <= this.lanes.length; i++) {
      ctx.moveTo(LABEL_W, i * LANE_H - 0.5);
      ctx.lineTo(LABEL_W + this.plotWidth, i * LANE_H - 0.5);
    }
    ctx.stroke();
  }

  private drawLane(ctx: CanvasRenderingContext2D, lane: Lane, y: number): void {
    const d = this.data!;
    const perNs = this.store.unitOf(this.laneMethod.get(lane) ?? this.store.method) === "ns";
    let max = 1;
    if (!perNs) for (const w of lane.weight) if (w > max) max = w;
    const inner = LANE_H - 3;
    const px = 1 / (window.devicePixelRatio || 1);
    let last = "";
    for (let k = 0; k < lane.bucket.length; k++) {
      const t0 = d.from + lane.bucket[k]! * d.bucket_ns;
      const x0 = this.xOf(t0);
      const x1 = this.xOf(t0 + d.bucket_ns);
      const fill = perNs ? lane.weight[k]! / d.bucket_ns : Math.sqrt(lane.weight[k]! / max);
      const bh = Math.max(0.25, Math.min(1, fill)) * inner;
      const n = this.names.get(lane.func[k]!);
      const color = n ? colorOf(n[0], n[1]) : "#999";
      if (color !== last) { ctx.fillStyle = color; last = color; }
      ctx.fillRect(x0, y + 1 + inner - bh, Math.max(px, x1 - x0), bh);
    }
  }

  private drawOverlays(ctx: CanvasRenderingContext2D, height: number): void {
    const sel = this.dragSel ?? this.store.selection;
    if (sel) {
      const x0 = this.xOf(sel.from), x1 = this.xOf(sel.to);
      ctx.fillStyle = "rgba(40, 90, 200, 0.16)";
      ctx.fillRect(x0, 0, Math.max(1, x1 - x0), height);
      ctx.strokeStyle = "rgba(40, 90, 200, 0.9)";
      ctx.strokeRect(Math.round(x0) + 0.5, 0.5, Math.max(1, Math.round(x1 - x0)), height - 1);
    }
    if (this.marker) {
      const i = this.lanes.findIndex(l => l.key === this.marker!.key);
      const x = Math.round(this.xOf(this.marker.t)) + 0.5;
      ctx.strokeStyle = "#d00";
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(x, i >= 0 ? i * LANE_H : 0);
      ctx.lineTo(x, i >= 0 ? (i + 1) * LANE_H : height);
      ctx.stroke();
      ctx.lineWidth = 1;
    }
  }

  private drawLabels(ctx: CanvasRenderingContext2D, lanes: Lane[]): void {
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    lanes.forEach((lane, i) => {
      const y = i * LANE_H;
      ctx.fillStyle = i % 2 ? "#f3f5f9" : "#fafbfd";
      ctx.fillRect(0, y, LABEL_W - 4, LANE_H);
      ctx.fillStyle = "#1f2633";
      let label = lane.label;
      while (label.length > 3 && ctx.measureText(label).width > LABEL_W - 12) label = label.slice(0, -2);
      if (label !== lane.label) label = label.slice(0, -1) + "…";
      ctx.fillText(label, 6, y + LANE_H / 2);
    });
  }

  /** A one-line description of what is under the pointer. */
  describe(hit: Hit): string {
    const unit = this.store.unitOf(this.laneMethod.get(hit.lane) ?? this.store.method) === "ns" ? "" : " " + (this.store.result?.event ?? "");
    const head = `${hit.lane.label} · ${formatTime(hit.t)}`;
    if (!hit.func) return head + " · idle";
    return `${head} · ${hit.func}${hit.module ? " (" + hit.module + ")" : ""} · ${formatInt(hit.count)} samples · weight ${formatInt(hit.weight)}${unit}`;
  }
}
