// Number formatting: times (ns/µs/ms/s), weights with thousands separators, shares as %.

const UNITS: [number, string][] = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];

function unitFor(ns: number): [number, string] {
  const a = Math.abs(ns);
  for (const u of UNITS) if (a >= u[0]) return u;
  return [1, "ns"];
}

/** A duration or time in ns with about 3 significant digits: "12.3 ms". */
export function formatTime(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !isFinite(ns)) return "—";
  if (ns === 0) return "0 ns";
  const [div, unit] = unitFor(ns);
  const v = ns / div;
  if (unit === "ns") return Math.round(v) + " ns";
  const digits = Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 10 ? 2 : 3;
  return v.toFixed(digits) + " " + unit;
}

/** A time label for an axis whose ticks are `step` ns apart: enough decimals to tell ticks apart. */
export function formatTick(ns: number, step: number): string {
  const [div, unit] = unitFor(Math.max(Math.abs(ns), step));
  const stepInUnit = step / div;
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(stepInUnit) + 1e-9)));
  return (ns / div).toFixed(decimals) + " " + unit;
}

/** An integer with thousands separators: 1234567 -> "1,234,567". */
export function formatInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) return "—";
  const s = Math.round(Math.abs(n)).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (n < 0 ? "-" : "") + s;
}

/** A number that may have a fraction (counter values): thousands separators, 3 significant digits below 100. */
export function formatNumber(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) return "—";
  if (Math.abs(n) >= 100 || Number.isInteger(n)) return formatInt(n);
  return n.toPrecision(3);
}

/** A fraction as a percentage: 0.4213 -> "42.1%". */
export function formatShare(f: number | null | undefined): string {
  if (f === null || f === undefined || !isFinite(f)) return "—";
  const p = f * 100;
  const a = Math.abs(p);
  return (a >= 10 || a === 0 ? p.toFixed(1) : p.toFixed(2)) + "%";
}

/** A signed difference of shares: +3.2 pp. */
export function formatDiff(f: number | null | undefined): string {
  if (f === null || f === undefined || !isFinite(f)) return "—";
  const p = f * 100;
  return (p > 0 ? "+" : "") + p.toFixed(2) + " pp";
}

export function formatRatio(r: number | null | undefined): string {
  if (r === null || r === undefined || !isFinite(r)) return "—";
  return r.toFixed(r >= 100 ? 0 : 2) + "×";
}

/** The unit name of weights for column headings. */
export function weightUnit(unit: string | undefined, event: string | undefined): string {
  if (unit === "ns") return "ns";
  return event || unit || "events";
}

/** A weight: a duration when weights are ns of CPU time, else a count of events. */
export function formatWeight(w: number | null | undefined, unit: string | undefined): string {
  return unit === "ns" ? formatTime(w) : formatInt(w);
}
