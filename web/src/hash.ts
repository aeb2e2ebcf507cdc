// Keeps the view in the URL fragment (#r=0&method=...&view=a-b&sel=a-b) so that a reload or a shared link restores it.

import type { LaneMode, Store, StartState } from "./state";
import type { Range } from "./types";

function range(s: string | null): Range | undefined {
  const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(s ?? "");
  if (!m) return undefined;
  const from = Number(m[1]), to = Number(m[2]);
  return to > from ? { from, to } : undefined;
}

/** What the fragment asks for: a result index and the state to start it with. */
export function readHash(): { r: number | null; mode: "result" | "compare"; start: StartState } {
  const q = new URLSearchParams(location.hash.replace(/^#/, ""));
  const r = q.has("r") ? Number(q.get("r")) : null;
  const lanes = q.get("lanes");
  return {
    r: r !== null && Number.isInteger(r) && r >= 0 ? r : null,
    mode: q.get("mode") === "compare" ? "compare" : "result",
    start: {
      method: q.get("method") ?? undefined,
      laneMode: lanes === "cpu" || lanes === "thread" ? (lanes as LaneMode) : undefined,
      view: range(q.get("view")),
      selection: range(q.get("sel")),
      tids: (q.get("tids") ?? "").split(",").filter(Boolean).map(Number).filter(Number.isInteger),
    },
  };
}

/** Writes the state into the fragment (replacing the history entry) a moment after each change. */
export function keepHash(store: Store): void {
  let timer: number | undefined;
  const write = (): void => {
    timer = undefined;
    const q = new URLSearchParams();
    q.set("r", String(store.r));
    if (store.mode === "compare") q.set("mode", "compare");
    if (store.method !== "none") q.set("method", store.method);
    if (store.laneMode !== "thread") q.set("lanes", store.laneMode);
    const full = store.full, v = store.view;
    if (v.from > full.from || v.to < full.to) q.set("view", `${Math.round(v.from)}-${Math.round(v.to)}`);
    if (store.selection) q.set("sel", `${Math.round(store.selection.from)}-${Math.round(store.selection.to)}`);
    if (store.tids.length) q.set("tids", store.tids.join(","));
    const hash = "#" + q.toString().replace(/%2C/g, ",");
    if (hash !== location.hash) history.replaceState(null, "", hash);
  };
  const later = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = window.setTimeout(write, 250);
  };
  for (const t of ["result", "method", "lanes", "view", "selection", "mode", "threads"] as const) store.on(t, later);
}
