// The page's shared state (result, method, lanes, view range, selection) and its change events.

import type { Range, ResultInfo } from "./types";

export type LaneMode = "thread" | "cpu";
export type Topic = "result" | "method" | "method2" | "lanes" | "view" | "selection" | "mode" | "threads";

type Listener = () => void;

/** State to open a result with (from the URL fragment); anything not valid for it is ignored. */
export interface StartState { method?: string; laneMode?: LaneMode; view?: Range; selection?: Range; tids?: number[] }

export class Store {
  results: ResultInfo[] = [];
  r = 0;
  method = "none";
  method2 = "";
  laneMode: LaneMode = "thread";
  /** The timeline's visible range. */
  view: Range = { from: 0, to: 1 };
  /** The range picked by dragging; filters summary, trees and counters. */
  selection: Range | null = null;
  mode: "result" | "compare" = "result";
  /** Thread ids the views are restricted to (empty: all threads). */
  tids: number[] = [];

  private listeners = new Map<Topic, Listener[]>();

  on(topic: Topic, fn: Listener): void {
    const l = this.listeners.get(topic) ?? [];
    l.push(fn);
    this.listeners.set(topic, l);
  }

  emit(topic: Topic): void {
    for (const fn of this.listeners.get(topic) ?? []) fn();
  }

  get result(): ResultInfo | undefined { return this.results[this.r]; }

  /** The whole time span of the current result. */
  get full(): Range {
    const d = this.result?.duration_ns ?? 0;
    return { from: 0, to: Math.max(1, d) };
  }

  /** from/to query parameters of the selection (none when nothing is selected). */
  get selParams(): { from?: number; to?: number } {
    return this.selection ? { from: Math.floor(this.selection.from), to: Math.ceil(this.selection.to) } : {};
  }

  /** The tids query parameter (none when all threads are shown). */
  get tidsParam(): string | undefined {
    return this.tids.length ? this.tids.join(",") : undefined;
  }

  /** Shows only `tid` (or adds it to the shown threads); shows all again when it was the only one. */
  filterThread(tid: number, add: boolean): void {
    if (add) this.tids = this.tids.includes(tid) ? this.tids.filter(t => t !== tid) : [...this.tids, tid];
    else this.tids = this.tids.length === 1 && this.tids[0] === tid ? [] : [tid];
    this.emit("threads");
  }

  clearThreads(): void { this.tids = []; this.emit("threads"); }

  /** What weights count under `method`: points of a time assignment are always ns. */
  unitOf(method: string): string | undefined {
    return method && method !== "none" ? "ns" : this.result?.weight_unit;
  }

  /** What weights count in the current method's views. */
  get weightUnit(): string | undefined { return this.unitOf(this.method); }

  /** The method query parameter: omitted for "none" so results without branches work. */
  get methodParam(): string | undefined {
    return this.method && this.method !== "none" ? this.method : undefined;
  }

  setResult(r: number, start: StartState = {}): void {
    this.r = r;
    const res = this.result;
    const methods = res?.methods ?? ["none"];
    this.method = start.method && methods.includes(start.method) ? start.method
      : methods.includes("none") ? "none" : (methods[0] ?? "none");
    this.method2 = "";
    if (start.laneMode) this.laneMode = start.laneMode;
    const known = new Set((res?.threads ?? []).map(t => t.tid));
    this.tids = (start.tids ?? []).filter(t => known.has(t));
    const full = this.full;
    const inside = (x: Range | undefined): Range | null => {
      if (!x) return null;
      const from = Math.max(full.from, x.from), to = Math.min(full.to, x.to);
      return to > from ? { from, to } : null;
    };
    this.view = inside(start.view) ?? full;
    this.selection = inside(start.selection);
    this.emit("result");
  }

  setMethod(m: string): void { this.method = m; this.emit("method"); }
  setMethod2(m: string): void { this.method2 = m; this.emit("method2"); }
  setLaneMode(m: LaneMode): void { this.laneMode = m; this.emit("lanes"); }
  setMode(m: "result" | "compare"): void { this.mode = m; this.emit("mode"); }

  setView(v: Range): void {
    const full = this.full;
    const minSpan = Math.min(1000, full.to - full.from);
    let span = Math.max(minSpan, Math.min(v.to - v.from, full.to - full.from));
    let from = v.from;
    if (v.to - v.from !== span) from = (v.from + v.to) / 2 - span / 2;
    from = Math.max(full.from, Math.min(from, full.to - span));
    span = Math.min(span, full.to - from);
    if (from === this.view.from && from + span === this.view.to) return;
    this.view = { from, to: from + span };
    this.emit("view");
  }

  setSelection(s: Range | null): void {
    if (s) {
      const full = this.full;
      const from = Math.max(full.from, Math.min(s.from, s.to));
      const to = Math.min(full.to, Math.max(s.from, s.to));
      s = to > from ? { from, to } : null;
    }
    this.selection = s;
    this.emit("selection");
  }
}
