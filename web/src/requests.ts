// The requests view of a latency result (`api/latency`): every request as a bar in a lane
// under the timeline, on the timeline's own time mapping (it follows zoom and pan), coloured
// by duration; the histogram of durations with the threshold, brushed to list the requests of
// a duration range; a picked request (lane or table) zooms the timeline to it and shows its
// time by part, its cause and the details behind it; the mean slow request beside the mean
// normal one, part by part.

import { Latest, errorText } from "./api";
import { byId, clear, h, showError } from "./dom";
import { formatInt, formatShare, formatTime } from "./format";
import type { Store } from "./state";
import { LABEL_W, type Timeline } from "./timeline";
import { panBy, zoomAround } from "./timeline-input";
import { shows, VIEWS } from "./views";

interface Site { name: string; count: number; ns: number }
interface Wait {
  ns: number; call: string; caller: string; syscall: string;
  waker_tid: number; waker_name: string; waker_function: string; waker_call: string;
}
interface Preemption { ns: number; by_tid: number; by_name: string; by_function: string }
export interface LatencyRequest {
  id: number; tid: number; thread: string;
  /** ns from the result's first record (the page's time 0 when that is the first sample). */
  start: number; duration: number; slow: boolean; cause_kind: string; cause: string;
  parts: Record<string, number>; samples: number; functions: { name: string; ns: number }[];
  faults: number; fault_sites: Site[]; syscalls: Site[]; waits: Wait[]; preemptions: Preemption[];
}
export interface LatencyAnswer {
  source: string; threshold: number; threshold_how: string; span: number;
  percentiles: Record<string, number>; part_names: string[]; part_keys: string[];
  histogram: { from: number; to: number; count: number }[];
  requests: LatencyRequest[]; unfinished: number; notes: string[];
}

/** Height of the requests lane under the timeline, CSS px. */
export const REQUEST_LANE_H = 26;
/** Rows the table lists at most (the longest requests of the brushed range). */
const TABLE_MAX = 500;
/** Histogram picture, CSS px. */
const HW = 600, HH = 178, HPAD_L = 24, HPAD_R = 24, HPAD_T = 22, HPAD_B = 36;

const PART_COLORS: Record<string, string> = {
  cpu: "#4c78a8", faults: "#f58518", syscalls: "#54a24b", interrupts: "#b279a2",
  blocked: "#e45756", runnable: "#d4a300", unexplained: "#bab0ac",
};
const partColor = (k: string): string => PART_COLORS[k] ?? "#999";

/** Durations' colours: pale to deep blue up to the threshold, orange to dark red above it (log scale). */
class DurationScale {
  constructor(readonly lo: number, readonly thr: number, readonly hi: number) {}

  static of(d: LatencyAnswer): DurationScale {
    const ds = d.requests.map(q => q.duration);
    const lo = Math.max(1, d.histogram[0]?.from ?? Math.min(...ds, 1));
    const hi = Math.max(lo * 2, ...ds);
    return new DurationScale(lo, Math.min(hi, Math.max(lo, d.threshold)), hi);
  }

  /** Where `ns` falls between lo and hi, 0..1 on a log scale. */
  at(ns: number): number {
    return Math.max(0, Math.min(1, Math.log(Math.max(ns, this.lo) / this.lo) / Math.log(this.hi / this.lo)));
  }

  color(ns: number): string {
    if (ns <= this.thr) {
      const f = this.thr > this.lo ? Math.log(Math.max(ns, this.lo) / this.lo) / Math.log(this.thr / this.lo) : 1;
      return `hsl(212 ${Math.round(35 + 30 * f)}% ${Math.round(80 - 32 * f)}%)`;
    }
    const f = this.hi > this.thr ? Math.min(1, Math.log(ns / this.thr) / Math.log(this.hi / this.thr)) : 1;
    return `hsl(${Math.round(38 - 38 * f)} 88% ${Math.round(52 - 14 * f)}%)`;
  }

  /** A CSS gradient of the scale from lo to hi. */
  gradient(): string {
    const p = (this.at(this.thr) * 100).toFixed(1);
    return `linear-gradient(to right, ${this.color(this.lo)} 0%, ${this.color(this.thr)} ${p}%, ${this.color(this.thr * 1.0001)} ${p}%, ${this.color(this.hi)} 100%)`;
  }
}

/** An SVG element. */
function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function grid(id: string, heads: string[], rows: (string | number)[][], num: number[] = []): HTMLElement {
  const head = h("tr", {}, ...heads.map((t, i) => h("th", { class: num.includes(i) ? "num" : undefined, text: t })));
  const body = rows.map(r => h("tr", {}, ...r.map((c, i) => h("td", { class: num.includes(i) ? "num" : undefined, title: String(c), text: String(c) }))));
  return h("table", { id, class: "grid" }, h("thead", {}, head), h("tbody", {}, ...body));
}

/** A bar split into parts (keys of `parts`), `scale` ns filling the whole width. */
function partsBar(d: LatencyAnswer, parts: Record<string, number>, scale: number, label: string): HTMLElement {
  const bar = h("div", { class: "parts-bar", "aria-label": label });
  d.part_keys.forEach((k, i) => {
    const v = parts[k] ?? 0;
    if (v <= 0) return;
    const seg = h("span", { class: "part-seg", "data-part": k, title: `${d.part_names[i] ?? k}: ${formatTime(v)}` });
    seg.style.width = `${(100 * v) / Math.max(1, scale)}%`;
    seg.style.background = partColor(k);
    bar.append(seg);
  });
  return bar;
}

const thread = (tid: number, name: string): string => (tid ? `${tid}${name ? ` (${name})` : ""}` : "unknown");

/** What a request is, in one line (lane tooltip, detail heading). */
function describe(q: LatencyRequest): string {
  return `request ${q.id} · thread ${thread(q.tid, q.thread)} · ${formatTime(q.duration)} starting at ${formatTime(q.start)}${q.slow ? " · slow" : ""}`;
}

type Brush = { lo: number; hi: number } | "slow";

/** The requests section and the requests lane: shown for results whose analysis declares the view. */
export class RequestsView {
  readonly el: HTMLElement;
  private readonly laneWrap: HTMLElement;
  private readonly lane: HTMLCanvasElement;
  private readonly legend: HTMLElement;
  private latest = new Latest();
  private data: LatencyAnswer | null = null;
  private scale = new DurationScale(1, 1, 2);
  /** Requests by duration, shortest first: the drawing order, so that the longest are on top. */
  private order: LatencyRequest[] = [];
  private brush: Brush | null = null;
  private picked: LatencyRequest | null = null;

  constructor(private readonly store: Store, private readonly tl: Timeline) {
    this.el = h("section", { id: "requests", class: "panel", hidden: true });
    byId("timeline-section").after(this.el);
    this.lane = h("canvas", { id: "requests-lane", "aria-label": "requests on the timeline's time axis, coloured by duration" });
    this.legend = h("div", { id: "requests-legend", class: "requests-legend" });
    this.laneWrap = h("div", { id: "requests-lane-wrap", hidden: true }, this.lane, this.legend);
    byId("timeline-wrap").after(this.laneWrap);
    this.attachLaneInput();
    new ResizeObserver(() => requestAnimationFrame(() => this.draw())).observe(tl.canvas);
    window.addEventListener("resize", () => this.draw());
  }

  async refresh(): Promise<void> {
    const show = shows(VIEWS.requests, this.store);
    this.el.hidden = !show;
    this.laneWrap.hidden = !show;
    this.brush = null;
    this.picked = null;
    if (!show) { this.latest.cancel(); this.data = null; return; }
    try {
      const d = await this.latest.get<LatencyAnswer>("latency", { r: this.store.r });
      if (!d) return;
      this.data = d;
      this.scale = DurationScale.of(d);
      this.order = [...d.requests].sort((a, b) => a.duration - b.duration);
      this.render();
    } catch (e) {
      this.data = null;
      this.laneWrap.hidden = true;
      showError(this.el, errorText(e));
    }
  }

  /** Requests of the shown threads (the page's thread filter). */
  private get laneRequests(): LatencyRequest[] {
    const tids = this.store.tids;
    return tids.length ? this.order.filter(q => tids.includes(q.tid)) : this.order;
  }

  private inBrush(q: LatencyRequest): boolean {
    const b = this.brush, d = this.data;
    if (!b || !d) return false;
    if (b === "slow") return q.slow;
    const from = d.histogram[b.lo]!.from, to = d.histogram[b.hi]!.to;
    // The first bucket also counts what is shorter than its start, as the API's histogram does.
    return (b.lo === 0 || q.duration >= from) && q.duration < to;
  }

  // --- the lane -------------------------------------------------------------------------

  /** Draws the lane on the timeline's time mapping (its `xOf`, label column and width). */
  /** The timeline's range or thread filter changed: redraw on its time axis. */
  followTimeline(): void {
    this.draw();
  }

  draw(): void {
    const d = this.data, c = this.lane;
    if (!d || this.laneWrap.hidden) return;
    const v = this.store.view;
    const cssW = this.tl.canvas.clientWidth || this.laneWrap.clientWidth;
    if (!cssW) return;
    const dpr = window.devicePixelRatio || 1;
    c.style.width = cssW + "px";
    c.style.height = REQUEST_LANE_H + "px";
    const w = Math.round(cssW * dpr), hh = Math.round(REQUEST_LANE_H * dpr);
    if (c.width !== w) c.width = w;
    if (c.height !== hh) c.height = hh;
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, REQUEST_LANE_H);
    const pw = this.tl.plotWidth, inner = REQUEST_LANE_H - 4, px = 1 / dpr;
    const all = this.laneRequests;
    let visible = 0, highlighted = 0;
    ctx.fillStyle = "#fbfcfe";
    ctx.fillRect(LABEL_W, 0, pw, REQUEST_LANE_H);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, 0, pw, REQUEST_LANE_H);
    ctx.clip();
    const bar = (q: LatencyRequest): void => {
      const x0 = this.tl.xOf(q.start), x1 = this.tl.xOf(q.start + q.duration);
      const bh = inner * (0.35 + 0.65 * this.scale.at(q.duration));
      ctx.fillStyle = this.scale.color(q.duration);
      ctx.fillRect(x0, 2 + inner - bh, Math.max(px, x1 - x0), bh);
    };
    const brushed: LatencyRequest[] = [];
    ctx.globalAlpha = this.brush ? 0.22 : 1;
    for (const q of all) {
      if (q.start + q.duration < v.from || q.start > v.to) continue;
      visible++;
      if (this.brush && this.inBrush(q)) brushed.push(q);
      else bar(q);
    }
    ctx.globalAlpha = 1;
    for (const q of brushed) bar(q);
    if (this.brush) {
      // A mark above every brushed request, so that sub-pixel ones show too.
      ctx.fillStyle = "#2a6fdb";
      for (const q of brushed) {
        const x0 = this.tl.xOf(q.start), x1 = this.tl.xOf(q.start + q.duration);
        ctx.fillRect(x0, 0, Math.max(1, x1 - x0), 2);
      }
      highlighted = all.filter(q => this.inBrush(q)).length;
    }
    const p = this.picked;
    if (p && (!this.store.tids.length || this.store.tids.includes(p.tid))) {
      const x0 = this.tl.xOf(p.start), x1 = this.tl.xOf(p.start + p.duration);
      const wdt = Math.max(3, x1 - x0), x = x1 - x0 < 3 ? (x0 + x1) / 2 - 1.5 : x0;
      ctx.strokeStyle = "#111";
      ctx.lineWidth = 2;
      ctx.strokeRect(Math.round(x) + 0.5, 1, wdt, REQUEST_LANE_H - 2);
      ctx.lineWidth = 1;
    }
    ctx.restore();
    ctx.fillStyle = "#f3f5f9";
    ctx.fillRect(0, 0, LABEL_W - 4, REQUEST_LANE_H);
    ctx.fillStyle = "#1f2633";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillText(`requests (${formatInt(all.length)})`, 6, REQUEST_LANE_H / 2);
    if (!all.length) {
      ctx.fillStyle = "#667";
      ctx.fillText(d.requests.length ? "No request on the shown threads." : "No request was seen.", LABEL_W + 8, REQUEST_LANE_H / 2);
    }
    Object.assign(c.dataset, {
      from: String(Math.round(v.from)), to: String(Math.round(v.to)), requests: String(all.length),
      visible: String(visible), highlighted: String(highlighted), picked: p ? String(p.id) : "",
    });
  }

  /** The request under x (within 3 px), the longest when several are: slow ones win. */
  private requestAt(x: number): LatencyRequest | null {
    if (x < LABEL_W) return null;
    const t = this.tl.tOf(x), v = this.store.view;
    const tol = (3 / this.tl.plotWidth) * (v.to - v.from);
    let best: LatencyRequest | null = null;
    for (const q of this.laneRequests) {
      if (q.start - tol <= t && q.start + q.duration + tol >= t && (!best || q.duration > best.duration)) best = q;
    }
    return best;
  }

  /** Wheel zooms, drag pans, a click picks the request under the pointer. */
  private attachLaneInput(): void {
    const c = this.lane;
    let drag: { x0: number; from: number; moved: boolean; id: number } | null = null;
    const localX = (e: MouseEvent): number => e.clientX - c.getBoundingClientRect().left;
    c.addEventListener("wheel", e => {
      e.preventDefault();
      const x = localX(e);
      const dy = e.deltaY * (e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 400 : 1);
      zoomAround(this.store, this.tl.tOf(Math.max(LABEL_W, x)), Math.exp(Math.max(-2, Math.min(2, dy * 0.002))));
    }, { passive: false });
    c.addEventListener("pointerdown", e => {
      if (e.button !== 0) return;
      drag = { x0: localX(e), from: this.store.view.from, moved: false, id: e.pointerId };
      c.setPointerCapture(e.pointerId);
      e.preventDefault();
    });
    c.addEventListener("pointermove", e => {
      const x = localX(e);
      if (!drag) {
        const q = this.requestAt(x);
        c.title = q ? `${describe(q)}: ${q.cause}` : "";
        c.style.cursor = q ? "pointer" : "default";
        return;
      }
      if (Math.abs(x - drag.x0) > 3) drag.moved = true;
      if (!drag.moved) return;
      const v = this.store.view;
      const dt = ((x - drag.x0) / this.tl.plotWidth) * (v.to - v.from);
      panBy(this.store, drag.from - dt - v.from);
    });
    const end = (e: PointerEvent, cancelled: boolean): void => {
      if (!drag || e.pointerId !== drag.id) return;
      const dr = drag;
      drag = null;
      if (c.hasPointerCapture(e.pointerId)) c.releasePointerCapture(e.pointerId);
      if (cancelled || dr.moved) return;
      const q = this.requestAt(dr.x0);
      if (q) this.pick(q);
    };
    c.addEventListener("pointerup", e => end(e, false));
    c.addEventListener("pointercancel", e => end(e, true));
  }

  /** Zooms the timeline to `q` with a quarter of its duration on each side and shows its breakdown. */
  pick(q: LatencyRequest): void {
    this.picked = q;
    const margin = Math.max(q.duration / 4, 250);
    this.store.setView({ from: q.start - margin, to: q.start + q.duration + margin });
    this.renderDetail();
    this.renderTable();
    this.draw();
  }

  // --- the section ----------------------------------------------------------------------

  private render(): void {
    const d = this.data!;
    clear(this.el);
    const slow = d.requests.filter(q => q.slow).length;
    const pc = d.percentiles;
    this.el.append(h("h2", { text: "Requests" }),
      h("p", { class: "note", text: `Boundaries: ${d.source}.` }),
      h("table", { id: "requests-facts", class: "facts" }, h("tbody", {},
        ...([
          ["Requests", `${formatInt(d.requests.length)}${d.unfinished ? ` (and ${formatInt(d.unfinished)} that never ended)` : ""}`],
          ["Slow", `${formatInt(slow)} longer than ${formatTime(d.threshold)}`],
          ["Duration", ["p50", "p90", "p99", "p99.9", "max"].map(k => `${k} ${formatTime(pc[k])}`).join(" · ")],
        ] as [string, string][]).map(([k, v]) => h("tr", { "data-fact": k }, h("th", { text: k }), h("td", { text: v }))))));
    for (const n of d.notes) this.el.append(h("p", { class: "note", text: n }));
    this.legend.style.setProperty("--scale", this.scale.gradient());
    clear(this.legend);
    this.legend.append(h("span", { text: formatTime(this.scale.lo) }), h("span", { class: "requests-scale" }),
      h("span", { text: formatTime(this.scale.hi) }),
      h("span", { class: "hint", text: `bar colour and height: duration (log scale), blue up to the threshold ${formatTime(d.threshold)}, orange to red above it · click a request: zoom to it and explain it · drag: pan · wheel: zoom` }));
    const top = h("div", { class: "requests-top" },
      h("figure", { id: "requests-histogram-box" },
        h("figcaption", { text: "Requests by duration (bar heights on a log scale): drag across bars to list the requests in that range" }),
        this.histogram(),
        h("div", { class: "toolbar" },
          h("button", { id: "requests-brush-slow", title: "list the slow requests" , text: "slow requests" }),
          h("button", { id: "requests-brush-clear", text: "clear" }),
          h("span", { id: "requests-brush-text", class: "note" }))),
      h("div", { id: "requests-compare" }));
    const bottom = h("div", { class: "requests-bottom" },
      h("div", { id: "requests-list" }), h("div", { id: "request-detail" }));
    this.el.append(top, bottom);
    byId("requests-brush-slow").addEventListener("click", () => this.setBrush("slow"));
    byId("requests-brush-clear").addEventListener("click", () => this.setBrush(null));
    this.renderCompare();
    this.renderTable();
    this.renderDetail();
    this.draw();
  }

  private setBrush(b: Brush | null): void {
    this.brush = b;
    this.markBrush();
    this.renderTable();
    this.draw();
  }

  /** The histogram: one bar per log bucket of the API, the threshold as a dashed line, a brush. */
  private histogram(): SVGSVGElement {
    const d = this.data!, H = d.histogram;
    const s = svg("svg", { id: "requests-histogram", width: HW, height: HH, viewBox: `0 0 ${HW} ${HH}`, "data-buckets": H.length, role: "img", "aria-label": "histogram of request durations" });
    const pw = HW - HPAD_L - HPAD_R, ph = HH - HPAD_T - HPAD_B, bw = pw / Math.max(1, H.length);
    const most = Math.max(1, ...H.map(b => b.count));
    s.append(svg("rect", { id: "requests-brush", x: 0, y: HPAD_T - 14, width: 0, height: ph + 14, visibility: "hidden" }));
    H.forEach((b, i) => {
      const bh = b.count ? Math.max(2, (ph * Math.log10(1 + b.count)) / Math.log10(1 + most)) : 0;
      const x = HPAD_L + i * bw;
      const mid = Math.sqrt(b.from * b.to);
      s.append(svg("rect", {
        class: "hist-bar", x: x + 1, y: HPAD_T + ph - bh, width: Math.max(1, bw - 2), height: bh, fill: this.scale.color(mid),
        "data-index": i, "data-from": b.from, "data-to": b.to, "data-count": b.count,
      }), svg("text", { class: "hist-count", x: x + bw / 2, y: HPAD_T + ph - bh - 3, "text-anchor": "middle" }, formatInt(b.count)));
    });
    s.append(svg("line", { x1: HPAD_L, x2: HPAD_L + pw, y1: HPAD_T + ph + 0.5, y2: HPAD_T + ph + 0.5, stroke: "#8a94a6" }));
    // Edge labels, as many as fit ("16 µs" rather than "16.00 µs": the edges are round).
    const every = Math.max(1, Math.ceil(50 / bw));
    for (let i = 0; i <= H.length; i += every) {
      const ns = i < H.length ? H[i]!.from : H[H.length - 1]!.to;
      s.append(svg("text", { class: "hist-edge", x: HPAD_L + i * bw, y: HPAD_T + ph + 13, "text-anchor": "middle" }, formatTime(ns).replace(/\.0+ /, " ")));
    }
    s.append(svg("text", { class: "hist-edge", x: HPAD_L + pw / 2, y: HH - 4, "text-anchor": "middle" }, "duration"));
    // The threshold, inside its bucket on the same log scale.
    const k = H.findIndex(b => d.threshold >= b.from && d.threshold < b.to);
    const xt = k >= 0 ? HPAD_L + (k + Math.log(d.threshold / H[k]!.from) / Math.log(H[k]!.to / H[k]!.from)) * bw
      : H.length && d.threshold < H[0]!.from ? HPAD_L : HPAD_L + pw;
    s.append(svg("line", { id: "requests-threshold-mark", "data-ns": d.threshold, x1: xt, x2: xt, y1: HPAD_T - 10, y2: HPAD_T + ph, stroke: "#b8312f", "stroke-dasharray": "4 3", "stroke-width": 1.5 }),
      svg("text", { class: "hist-threshold", x: Math.min(xt + 4, HW - 4), y: HPAD_T - 12, "text-anchor": xt + 4 > HW - 120 ? "end" : "start" }, `threshold ${formatTime(d.threshold)}`));
    this.attachBrush(s, bw);
    return s;
  }

  private attachBrush(s: SVGSVGElement, bw: number): void {
    const n = this.data!.histogram.length;
    let drag: { i0: number; i1: number; id: number } | null = null;
    const index = (e: PointerEvent): number => {
      const r = s.getBoundingClientRect();
      const x = ((e.clientX - r.left) / Math.max(1, r.width)) * HW;
      return Math.max(0, Math.min(n - 1, Math.floor((x - HPAD_L) / bw)));
    };
    s.addEventListener("pointerdown", e => {
      if (e.button !== 0 || !n) return;
      const i = index(e);
      drag = { i0: i, i1: i, id: e.pointerId };
      s.setPointerCapture(e.pointerId);
      this.markBrush(drag);
      e.preventDefault();
    });
    s.addEventListener("pointermove", e => {
      if (!drag) return;
      drag.i1 = index(e);
      this.markBrush(drag);
    });
    const end = (e: PointerEvent, cancelled: boolean): void => {
      if (!drag || e.pointerId !== drag.id) return;
      const dr = drag;
      drag = null;
      if (s.hasPointerCapture(e.pointerId)) s.releasePointerCapture(e.pointerId);
      if (cancelled) { this.markBrush(); return; }
      this.setBrush({ lo: Math.min(dr.i0, dr.i1), hi: Math.max(dr.i0, dr.i1) });
    };
    s.addEventListener("pointerup", e => end(e, false));
    s.addEventListener("pointercancel", e => end(e, true));
  }

  /** Shows the brush (being dragged, else the current one) on the histogram. */
  private markBrush(dragging?: { i0: number; i1: number }): void {
    const s = this.el.querySelector<SVGSVGElement>("#requests-histogram");
    const d = this.data;
    if (!s || !d) return;
    const b = dragging ? { lo: Math.min(dragging.i0, dragging.i1), hi: Math.max(dragging.i0, dragging.i1) } : this.brush;
    const pw = HW - HPAD_L - HPAD_R, bw = pw / Math.max(1, d.histogram.length);
    const rect = s.querySelector("#requests-brush")!;
    s.querySelectorAll<SVGRectElement>("rect.hist-bar").forEach((r, i) => {
      const on = b === "slow" ? d.histogram[i]!.to > d.threshold : !!b && i >= b.lo && i <= b.hi;
      r.classList.toggle("brushed", on);
    });
    if (b && b !== "slow") {
      rect.setAttribute("x", String(HPAD_L + b.lo * bw));
      rect.setAttribute("width", String((b.hi - b.lo + 1) * bw));
      rect.setAttribute("visibility", "visible");
    } else rect.setAttribute("visibility", "hidden");
    if (b && b !== "slow") {
      s.dataset.brushFrom = String(d.histogram[b.lo]!.from);
      s.dataset.brushTo = String(d.histogram[b.hi]!.to);
    } else { delete s.dataset.brushFrom; delete s.dataset.brushTo; }
  }

  /** The brushed requests (else the slowest), longest first; a click picks one. */
  private renderTable(): void {
    const box = this.el.querySelector("#requests-list"), d = this.data;
    if (!box || !d) return;
    clear(box);
    const b = this.brush;
    const chosen = b ? d.requests.filter(q => this.inBrush(q)) : d.requests.filter(q => q.slow);
    const list = [...(b ? chosen : chosen.length ? chosen : d.requests)].sort((x, y) => y.duration - x.duration);
    const shown = list.slice(0, b ? TABLE_MAX : 20);
    const what = b === "slow" ? `The ${formatInt(chosen.length)} slow requests`
      : b ? `${formatInt(chosen.length)} request${chosen.length === 1 ? "" : "s"} of ${formatTime(d.histogram[b.lo]!.from)} – ${formatTime(d.histogram[b.hi]!.to)}`
        : `The slowest requests (brush the histogram to list a duration range)`;
    const text = this.el.querySelector("#requests-brush-text");
    if (text) text.textContent = b ? `${formatInt(chosen.length)} requests selected` : "";
    box.append(h("h3", { text: what + (list.length > shown.length ? `: the ${formatInt(shown.length)} longest` : "") }));
    const head = h("tr", {}, ...["Request", "Thread", "Start", "Duration", "Cause"].map((t, i) => h("th", { class: i && i < 4 && i !== 1 ? "num" : undefined, text: t })));
    const rows = shown.map(q => {
      const tr = h("tr", { "data-id": q.id, class: [q.slow ? "slow" : "", this.picked?.id === q.id ? "picked" : ""].join(" ").trim() || undefined },
        h("td", { class: "num", text: String(q.id) }), h("td", { text: thread(q.tid, q.thread) }),
        h("td", { class: "num", text: formatTime(q.start) }), h("td", { class: "num", text: formatTime(q.duration) }),
        h("td", { class: "cause", title: q.cause, text: q.cause }));
      tr.addEventListener("click", () => this.pick(q));
      return tr;
    });
    const table = h("table", { id: "requests-table", class: "grid", "data-brushed": String(!!b), "data-selected": b ? chosen.length : 0, "data-rows": shown.length },
      h("thead", {}, head), h("tbody", {}, ...rows));
    box.append(h("div", { class: "requests-table-wrap" }, table));
  }

  /** The picked request: parts, cause, functions, waits, preemptions, fault sites, system calls. */
  private renderDetail(): void {
    const box = this.el.querySelector<HTMLElement>("#request-detail"), d = this.data, q = this.picked;
    if (!box || !d) return;
    clear(box);
    if (!q) {
      delete box.dataset.id;
      box.append(h("h3", { text: "Request" }), h("p", { class: "note", text: "Click a request in the lane under the timeline or in the table to zoom to it and see where its time went." }));
      return;
    }
    box.dataset.id = String(q.id);
    box.append(h("h3", { text: describe(q).replace(/^request/, "Request") }),
      h("p", { id: "request-cause", class: q.slow ? "cause slow" : "cause", "data-kind": q.cause_kind, text: q.cause }),
      partsBar(d, q.parts, q.duration, "time by part"),
      h("ul", { id: "request-parts", class: "parts-legend" }, ...d.part_keys.map((k, i) => {
        const v = q.parts[k] ?? 0;
        const li = h("li", { "data-part": k, "data-ns": v, class: v ? undefined : "zero" },
          h("span", { class: "swatch" }), `${d.part_names[i] ?? k} ${formatTime(v)} (${formatShare(v / Math.max(1, q.duration))})`);
        (li.firstChild as HTMLElement).style.background = partColor(k);
        return li;
      })));
    const none: string[] = [];
    const section = (title: string, rows: unknown[], make: () => HTMLElement): void => {
      if (rows.length) box.append(h("h4", { text: title }), make());
      else none.push(title.toLowerCase());
    };
    section("Functions", q.functions, () => grid("request-functions", ["Function (sampled, inclusive)", "Time"],
      q.functions.map(f => [f.name, formatTime(f.ns)]), [1]));
    section("Waits", q.waits, () => grid("request-waits", ["Blocked", "In", "Called from", "System call", "Woken by", "Which ran", "Waking call"],
      q.waits.map(w => [formatTime(w.ns), w.call || "—", w.caller || "—", w.syscall || "—", thread(w.waker_tid, w.waker_name), w.waker_function || "—", w.waker_call || "—"]), [0]));
    section("Preemptions", q.preemptions, () => grid("request-preemptions", ["Runnable, not running", "While thread", "Ran"],
      q.preemptions.map(p => [formatTime(p.ns), thread(p.by_tid, p.by_name), p.by_function || "—"]), [0]));
    section("Fault sites", q.fault_sites, () => grid("request-fault-sites", ["Where", "Faults", "Time"],
      q.fault_sites.map(f => [f.name, formatInt(f.count), formatTime(f.ns)]), [1, 2]));
    section("System calls", q.syscalls, () => grid("request-syscalls", ["System call", "Calls", "Time on CPU"],
      q.syscalls.map(f => [f.name, formatInt(f.count), formatTime(f.ns)]), [1, 2]));
    box.append(h("p", { class: "note", text: `${formatInt(q.samples)} samples and ${formatInt(q.faults)} page faults inside the request.` + (none.length ? ` No ${none.join(", ")}.` : "") }));
  }

  /** The mean slow request against the mean normal one, part by part, with the threshold. */
  private renderCompare(): void {
    const box = this.el.querySelector("#requests-compare"), d = this.data;
    if (!box || !d) return;
    clear(box);
    const slow = d.requests.filter(q => q.slow), normal = d.requests.filter(q => !q.slow);
    const mean = (qs: LatencyRequest[], f: (q: LatencyRequest) => number): number | null => (qs.length ? qs.reduce((a, q) => a + f(q), 0) / qs.length : null);
    const means = (qs: LatencyRequest[]): Record<string, number> => Object.fromEntries(d.part_keys.map(k => [k, mean(qs, q => q.parts[k] ?? 0) ?? 0]));
    const ms = means(slow), mn = means(normal);
    const ws = mean(slow, q => q.duration), wn = mean(normal, q => q.duration);
    box.append(h("h3", { text: "Slow and normal requests, mean time by part" }),
      h("p", { id: "requests-threshold", "data-ns": d.threshold, text: `Slow: longer than ${formatTime(d.threshold)} (the threshold, from ${d.threshold_how}): ${formatInt(slow.length)} of ${formatInt(d.requests.length)} requests.` }));
    const top = Math.max(ws ?? 0, wn ?? 0, 1);
    const row = (label: string, cls: string, parts: Record<string, number>, whole: number | null): HTMLElement =>
      h("div", { class: `compare-row ${cls}` }, h("span", { class: "compare-label", text: `${label}: ${whole === null ? "none" : formatTime(whole)}` }),
        whole === null ? h("span", { class: "note", text: "no request" }) : partsBar(d, parts, top, `${label} by part`));
    box.append(row("slow mean", "slow", ms, ws), row("normal mean", "normal", mn, wn));
    const cell = (v: number | null, cls: string): HTMLElement =>
      h("td", { class: `num ${cls}`, "data-ns": v === null ? "" : String(Math.round(v)), text: v === null ? "—" : formatTime(v) });
    const body = d.part_keys.map((k, i) => h("tr", { "data-part": k },
      h("td", {}, h("span", { class: "swatch", style: `background:${partColor(k)}` }), d.part_names[i] ?? k),
      cell(slow.length ? ms[k]! : null, "slow-mean"), cell(normal.length ? mn[k]! : null, "normal-mean"),
      cell(slow.length && normal.length ? ms[k]! - mn[k]! : null, "extra")));
    body.push(h("tr", { "data-part": "whole" }, h("td", { text: "whole request" }), cell(ws, "slow-mean"), cell(wn, "normal-mean"),
      cell(ws !== null && wn !== null ? ws - wn : null, "extra")));
    box.append(h("table", { id: "requests-compare-table", class: "grid" },
      h("thead", {}, h("tr", {}, ...["Part", "Slow mean", "Normal mean", "Slow − normal"].map((t, i) => h("th", { class: i ? "num" : undefined, text: t })))),
      h("tbody", {}, ...body)));
  }
}
