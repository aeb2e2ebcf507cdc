// The io view (`api/io`): an io collection's traffic over time, one line per device flow
// (and per IIO stack flow where the uncore measured them) in MB/s, a table of each series'
// total, average and peak (with the share of its link at the peak), the traced device use
// per thread, what this machine could not measure and why (DDIO, PCIe, DRAM), and the
// report's findings.

import { Latest, errorText } from "./api";
import { CHART_H, PAD_L, frame, polyline, setupCanvas, timeLabels } from "./chart";
import { colorOf } from "./colors";
import { byId, clear, h, showError } from "./dom";
import { formatShare } from "./format";
import type { Store } from "./state";
import { shows, VIEWS } from "./views";

interface Series {
  scope: "device" | "stack" | "socket"; name: string; flow: string; unit: string; label: string;
  socket: number | null; pci: string | null; link_bytes_per_s: number | null; total: number; average: number; peak: number;
}
interface UseRow { device: string; tid: number; comm: string; read_bytes: number; write_bytes: number; cpus: number[] }
interface DeviceUse { whole_machine: boolean; unavailable: string | null; lost: number; rows: UseRow[] }
export interface IoAnswer {
  device_use: DeviceUse | null;
  tick_ms: number; sources: string[]; duration: number;
  unmeasured: { ddio: string | null; pcie: string | null; dram: string | null };
  series: Series[]; ticks: { t: number; secs: number; rates: number[] }[];
  findings: string[]; notes: string[];
}

/** `12.345` MB (10^6 bytes), as the io report. */
export function mbText(bytes: number): string {
  return (bytes / 1e6).toFixed(3);
}

/** Series drawn: bytes of devices and stacks that moved anything. */
function drawn(d: IoAnswer): number[] {
  return d.series.flatMap((s, i) => (s.unit === "bytes" && s.scope !== "socket" && s.total > 0 ? [i] : []));
}

function table(d: IoAnswer): HTMLElement {
  const head = h("tr", {}, ...["Device or stack", "Flow", "Node/socket", "Total (MB)", "Average (MB/s)", "Peak (MB/s)", "Link at peak"].map(t => h("th", { text: t })));
  const rows = d.series.filter(s => s.unit === "bytes").map(s => h("tr", { "data-series": `${s.name} ${s.flow}` },
    h("td", { text: s.name + (s.label ? ` (${s.label})` : "") }), h("td", { text: s.flow }), h("td", { text: s.socket === null ? "—" : String(s.socket) }),
    h("td", { class: "num", text: mbText(s.total) }), h("td", { class: "num", text: mbText(s.average) }), h("td", { class: "num", text: mbText(s.peak) }),
    h("td", { class: "num", text: s.link_bytes_per_s ? formatShare(s.peak / s.link_bytes_per_s) : "—" })));
  return h("table", { id: "io-series", class: "grid" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

/** Which threads read from and wrote to which device (traced), busiest first. */
function useTable(u: DeviceUse): HTMLElement[] {
  const title = u.whole_machine ? "Device use by thread (every process)" : "Device use by the target's threads";
  if (u.unavailable) return [h("h3", { text: title }), h("p", { class: "note unmeasured", text: `not traced: ${u.unavailable}` })];
  const head = h("tr", {}, ...["Device", "Thread", "Name", "Read (MB)", "Written (MB)", "CPUs"].map(t => h("th", { text: t })));
  const rows = u.rows.map(r => h("tr", { "data-use": `${r.device} ${r.tid}` },
    h("td", { text: r.device.replace(/^[a-z]+:/, "") }), h("td", { class: "num", text: String(r.tid) }), h("td", { text: r.comm }),
    h("td", { class: "num", text: mbText(r.read_bytes) }), h("td", { class: "num", text: mbText(r.write_bytes) }), h("td", { text: r.cpus.join(",") })));
  const out = [h("h3", { text: title }), h("table", { id: "io-use", class: "grid" }, h("thead", {}, head), h("tbody", {}, ...rows))];
  if (!u.rows.length) out.push(h("p", { class: "note", text: "the target moved no data through any traced device" }));
  if (u.lost) out.push(h("p", { class: "note", text: `${u.lost} trace records were lost (the rings filled): the figures are short` }));
  return out;
}

function drawChart(c: HTMLCanvasElement, d: IoAnswer): void {
  const ctx = setupCanvas(c, CHART_H);
  if (!ctx) return;
  const pw = Math.max(10, c.clientWidth - PAD_L - 8), ph = CHART_H - 24;
  const lines = drawn(d);
  const top = Math.max(1, ...lines.flatMap(i => d.ticks.map(t => t.rates[i] ?? 0)));
  frame(ctx, `${mbText(top)} MB/s`, pw, ph);
  const end = d.ticks.length ? d.ticks[d.ticks.length - 1]! : null;
  timeLabels(ctx, { from: 0, to: end ? (end.t + end.secs) * 1e9 : 1 }, pw, ph);
  for (const i of lines) {
    const s = d.series[i]!;
    polyline(ctx, d.ticks.map(t => t.rates[i] ?? null), top, pw, ph, colorOf(`${s.name} ${s.flow}`));
  }
}

/** The io section: shown for results whose analysis declares the `io` view. */
export class IoView {
  readonly el: HTMLElement;
  private latest = new Latest();
  private data: IoAnswer | null = null;

  constructor(private readonly store: Store) {
    this.el = h("section", { id: "io", class: "panel", hidden: true });
    byId("memory").after(this.el);
    window.addEventListener("resize", () => this.draw());
  }

  async refresh(): Promise<void> {
    this.el.hidden = !shows(VIEWS.io, this.store);
    if (this.el.hidden) { this.latest.cancel(); this.data = null; return; }
    try {
      const d = await this.latest.get<IoAnswer>("io", { r: this.store.r });
      if (!d) return;
      this.data = d;
      this.render(d);
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }

  private render(d: IoAnswer): void {
    clear(this.el);
    this.el.append(h("h2", { text: "I/O traffic" }));
    this.el.append(h("p", { class: "note", text: `Sources: ${d.sources.join("; ") || "none"}; one point per ${d.tick_ms} ms over ${d.duration.toFixed(1)} s.` }));
    const why: [string, string | null][] = [["DDIO (L3 hits and misses of inbound I/O)", d.unmeasured.ddio], ["PCIe per IIO stack", d.unmeasured.pcie], ["DRAM and socket links", d.unmeasured.dram]];
    for (const [what, reason] of why) if (reason) this.el.append(h("p", { class: "note unmeasured", "data-unmeasured": what, text: `${what}: ${reason}` }));
    this.el.append(h("figure", {}, h("figcaption", { text: "Traffic over time, MB/s: one line per device or stack flow that moved data" }),
      h("canvas", { id: "io-timeline", class: "counter-chart", "aria-label": "I/O traffic over time" })));
    this.el.append(table(d));
    if (d.device_use) this.el.append(...useTable(d.device_use));
    const list = h("ul", { id: "io-findings" }, ...d.findings.map(f => h("li", { text: f })));
    this.el.append(h("h3", { text: "Findings" }), list);
    for (const n of d.notes) this.el.append(h("p", { class: "note", text: n }));
    this.draw();
  }

  private draw(): void {
    const c = this.el.querySelector<HTMLCanvasElement>("#io-timeline");
    if (c && this.data && !this.el.hidden) drawChart(c, this.data);
  }
}
