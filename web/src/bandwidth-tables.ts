// The tables of the memory-bandwidth section: average and peak per domain and flow, per
// memory channel (where the counters are per channel), and the `bandwidth` report's table
// of which objects and functions the bandwidth comes from, with its own title and notes.

import { h } from "./dom";
import { formatShare } from "./format";

/** [start ns from the result's start (negative before it), duration ns, GB/s]. */
export type Tick = [number, number, number];

/** A report table as the API gives it: the report's title, headers, cells and notes. */
export interface ReportTable { title?: string | null; columns: string[]; rows: string[][]; notes: string[]; error?: undefined }

export interface BandwidthAnswer {
  available: boolean;
  why?: string;
  source?: string;
  domain?: string;
  tick_ms?: number;
  maximum?: { gbs: number; how: string } | null;
  reference?: { gbs: number; what: string } | null;
  range?: [number, number] | null;
  high_share?: number;
  dram?: Tick[];
  series?: { domain: number; flow: string; points: Tick[] }[];
  channels?: { domain: number; channel: number; flow: string; points: Tick[] }[];
  histogram?: { from: number; to: number; seconds: number }[];
  stats?: { domain: string; flow: string; average: number; peak: number; maximum: number | null }[];
  channel_stats?: { domain: number; channel: number; flow: string; average: number; peak: number }[];
  by_object?: ReportTable | { error: string } | null;
  notes?: string[];
}

function head(heads: string[], numericFrom: number): HTMLTableSectionElement {
  const tr = h("tr");
  heads.forEach((x, i) => tr.append(h("th", { class: i >= numericFrom ? "num" : "", text: x })));
  return h("thead", {}, tr);
}

export function statsTable(d: BandwidthAnswer): HTMLElement {
  const body = h("tbody");
  for (const r of d.stats ?? []) {
    const of = (v: number): string => (r.maximum ? formatShare(v / r.maximum) : "—");
    body.append(h("tr", { "data-domain": r.domain, "data-flow": r.flow },
      h("td", { text: r.domain === "all" ? "all" : `${d.domain ?? "domain"} ${r.domain}` }), h("td", { text: r.flow }),
      h("td", { class: "num", text: r.average.toFixed(2) }), h("td", { class: "num", text: r.peak.toFixed(2) }),
      h("td", { class: "num", text: of(r.average) }), h("td", { class: "num", text: of(r.peak) })));
  }
  return h("table", { id: "bandwidth-stats", class: "grid" },
    head(["Domain", "Flow", "Average (GB/s)", "Peak (GB/s)", "Average of max", "Peak of max"], 2), body);
}

/** Per domain, channel and flow, as the report's "Bandwidth by memory channel". */
export function channelTable(d: BandwidthAnswer): HTMLElement {
  const body = h("tbody");
  for (const r of d.channel_stats ?? []) {
    body.append(h("tr", { "data-domain": String(r.domain), "data-channel": String(r.channel), "data-flow": r.flow },
      h("td", { text: `${d.domain ?? "domain"} ${r.domain}` }), h("td", { class: "num", text: String(r.channel) }), h("td", { text: r.flow }),
      h("td", { class: "num", text: r.average.toFixed(2) }), h("td", { class: "num", text: r.peak.toFixed(2) })));
  }
  return h("figure", {}, h("figcaption", { text: "Bandwidth by memory channel" }),
    h("table", { id: "bandwidth-channel-stats", class: "grid" }, head(["Domain", "Channel", "Flow", "Average (GB/s)", "Peak (GB/s)"], 3), body));
}

/** The report's by-object table; numbers are right-aligned as the report aligns them. */
export function objectTable(t: ReportTable | { error: string }): HTMLElement {
  if (t.error !== undefined) return h("p", { id: "bandwidth-objects", class: "error", text: t.error });
  const numeric = (i: number): boolean => t.rows.some(r => /^[\d,.]+( %)?$/.test(r[i] ?? ""));
  const tr = h("tr");
  t.columns.forEach((c, i) => tr.append(h("th", { class: numeric(i) ? "num" : "", text: c })));
  const body = h("tbody");
  for (const r of t.rows) {
    const row = h("tr", { "data-object": r[0] ?? "" });
    r.forEach((c, i) => row.append(h("td", { class: numeric(i) ? "num" : "", text: c, title: c })));
    body.append(row);
  }
  const fig = h("figure", { id: "bandwidth-objects", "data-rows": String(t.rows.length) },
    h("figcaption", { text: t.title ?? "" }), h("table", { class: "grid" }, h("thead", {}, tr), body));
  for (const n of t.notes) fig.append(h("p", { class: "note", text: n }));
  return fig;
}
