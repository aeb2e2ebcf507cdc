// The page's views in one table, and the one rule for when a view shows: the result opened, the
// page shows one result (not a comparison), the result's analysis declares the view (a result of
// no known kind: every view) or the view belongs to every result, and the result has what the
// view draws.

import type { Store } from "./state";
import type { ResultInfo } from "./types";

export interface ViewEntry {
  /** As analyses declare it (the `views` of their spec, `views` of `api/results`). */
  readonly name: string;
  /** A view of every result, declared by none (the platform: the machine and the result's samples). */
  readonly anyResult?: boolean;
  /** What the result must have besides the declaration. */
  readonly needs?: (r: ResultInfo) => boolean;
}

export const VIEWS = {
  timeline: { name: "timeline" },
  inspector: { name: "sample inspector" },
  trees: { name: "trees" },
  counters: { name: "counters", needs: r => !!r.has_counters },
  memory: { name: "memory-access", needs: r => !!r.has_memory },
  bandwidth: { name: "bandwidth" },
  // A result of no known kind was not made by `kairos collect io`: it has no traffic to draw.
  io: { name: "io", needs: r => r.views != null },
  // Likewise a result of no known kind has no requests: it was not made by `kairos collect latency`.
  requests: { name: "requests", needs: r => r.views != null },
  platform: { name: "platform", anyResult: true },
} satisfies Record<string, ViewEntry>;

/** Whether `view` shows for the store's current result. */
export function shows(view: ViewEntry, store: Store): boolean {
  const r = store.result;
  if (!r?.ok || store.mode !== "result") return false;
  const declared = view.anyResult || !r.views || r.views.includes(view.name);
  return declared && (view.needs?.(r) ?? true);
}
