// The platform picture of a result (`api/platform`): sockets, their NUMA nodes with CPUs,
// memory and distances, the devices under the node they are on (or under "no known node"),
// PCIe links, and the measured use of each where the result has it (samples per node, resident
// pages per node, memory bandwidth per node, each device's own traffic in an io result); "not
// measurable here" where it has not. Then the
// topology check's findings, one sentence per device.

import { Latest, errorText } from "./api";
import { h, showError } from "./dom";
import { formatInt, formatShare } from "./format";
import type { Store } from "./state";
import { shows, VIEWS } from "./views";

export const NOT_MEASURED = "not measurable here";

interface Node { id: number; cpus: number[]; mem_total_kb: number | null; distances: number[] }
interface Socket { id: number; cpus: number[]; cores: number }
interface Link { current_speed: string | null; current_width: number | null; max_speed: string | null; max_width: number | null }
interface Device {
  names: string[]; kind: string; pci_address: string | null; class: string; id: string | null;
  node: number | null; node_source: "sysfs" | "local-cpus" | "unknown"; sysfs_numa_node: number | null;
  local_cpus: number[]; root: string | null; link: Link | null; virtual_device: boolean; note: string | null;
}
interface Finding { device: string; node: number | null; verdict: "mismatch" | "local" | "unchecked"; sentence: string }
export interface PlatformAnswer {
  platform: { source: string; sockets: Socket[]; nodes: Node[]; devices: Device[] | null; notes: string[] };
  usage: { samples_by_node: Record<string, number>; samples_by_cpu: Record<string, number>; pages_by_node: Record<string, number> | null };
  findings: Finding[];
  notes: string[];
  samples: number;
  /** Each device's flows in an io result (by device name); null for other results. */
  traffic?: Record<string, Flow[]> | null;
}
interface Flow { flow: string; bytes: number; average: number; peak: number; link_bytes_per_s: number | null }
interface BandwidthAnswer { available: boolean; rows?: { domain: string; flow: string; average: number; peak: number }[] }

/** `0-3,8` from CPU numbers. */
export function cpuList(cpus: number[]): string {
  const v = [...new Set(cpus)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < v.length;) {
    let j = i;
    while (j + 1 < v.length && v[j + 1] === v[j]! + 1) j++;
    out.push(i === j ? `${v[i]}` : `${v[i]}-${v[j]}`);
    i = j + 1;
  }
  return out.join(",");
}

/** The device's short name: its Linux names without the class, else its class and address. */
function label(d: Device): string {
  const names = [...new Set(d.names.map(n => n.split(":").slice(1).join(":") || n))];
  return names.length ? names.join("/") : `${d.class} ${d.pci_address ?? ""}`.trim();
}

function linkText(l: Link | null, pci: boolean): string {
  if (!l) return pci ? "PCIe link: not in sysfs" : "";
  const one = (w: number | null, s: string | null) => [w ? `x${w}` : "", s ?? ""].filter(Boolean).join(" at ");
  const cur = one(l.current_width, l.current_speed), max = one(l.max_width, l.max_speed);
  return `PCIe link ${cur || "unknown"}` + (max && max !== cur ? ` (max ${max})` : "");
}

function fact(key: string, value: string, measured = true): HTMLElement {
  return h("div", { class: "platform-fact" + (measured ? "" : " unmeasured"), "data-fact": key }, h("span", { class: "key", text: key + ": " }), h("span", { text: value }));
}

/** `1.2 MB` (10^6 bytes, as the io report). */
function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes >= 1e8 ? 0 : 3)} MB`;
}

/** `rx 67.191 MB (33.437 MB/s average, 671.000 MB/s peak, 0.1% of the link at the peak)`. */
function flowText(f: Flow): string {
  const link = f.link_bytes_per_s ? `, ${formatShare(f.peak / f.link_bytes_per_s)} of the link at the peak` : "";
  return `${f.flow} ${mb(f.bytes)} (${mb(f.average)}/s average, ${mb(f.peak)}/s peak${link})`;
}

/** The device's traffic: measured flows, or not measurable here. */
function trafficItem(d: Device, traffic: Record<string, Flow[]> | null | undefined): HTMLElement {
  const names = d.names.map(n => n.split(":").slice(1).join(":") || n);
  const flows = names.flatMap(n => traffic?.[n] ?? []);
  if (!flows.length) return h("div", { class: "unmeasured", "data-fact": "traffic", text: `traffic: ${NOT_MEASURED}` });
  return h("div", { class: "platform-traffic", "data-fact": "traffic", text: `traffic: ${flows.map(flowText).join("; ")}` });
}

function deviceItem(d: Device, traffic?: Record<string, Flow[]> | null): HTMLElement {
  const from = d.virtual_device ? "virtual: no device, no node" : d.node_source === "local-cpus" ? "node derived from local_cpulist" : d.node_source === "unknown" ? "node unknown" : "";
  const li = h("li", { class: "platform-device", "data-device": label(d), "data-node": d.node ?? "unknown", "data-node-source": d.virtual_device ? "virtual" : d.node_source, title: d.note ?? "" },
    h("b", { text: label(d) }), ` ${d.kind}, ${d.class}` + (d.pci_address ? ` ${d.pci_address}` : "") + (d.id ? ` [${d.id}]` : ""));
  const link = linkText(d.link, d.pci_address !== null);
  if (link) li.append(h("div", { class: "platform-link", text: link }));
  if (d.local_cpus.length) li.append(h("div", { text: `local CPUs ${cpuList(d.local_cpus)}` }));
  if (from) li.append(h("div", { class: "platform-node-source", text: from + (d.note && !d.virtual_device ? `: ${d.note}` : "") }));
  li.append(trafficItem(d, traffic));
  return li;
}

function nodeBox(a: PlatformAnswer, n: Node, bw: BandwidthAnswer | null): HTMLElement {
  const box = h("div", { class: "platform-node", "data-node": n.id }, h("h4", { text: `Node ${n.id}` }));
  box.append(fact("CPUs", cpuList(n.cpus) || "none"));
  box.append(fact("Memory", n.mem_total_kb === null ? "unknown" : `${formatInt(n.mem_total_kb / 1024)} MiB`));
  box.append(fact("Distances", n.distances.map((d, i) => `node ${i}: ${d}`).join(", ")));
  const s = a.usage.samples_by_node[String(n.id)] ?? 0;
  box.append(a.samples > 0 ? fact("Samples", `${formatInt(s)} (${formatShare(s / a.samples)})`) : fact("Samples", NOT_MEASURED, false));
  const pages = a.usage.pages_by_node;
  box.append(pages ? fact("Resident pages", formatInt(pages[String(n.id)] ?? 0)) : fact("Resident pages", NOT_MEASURED, false));
  const rows = (bw?.available ? bw.rows ?? [] : []).filter(r => r.domain === String(n.id));
  box.append(rows.length ? fact("Bandwidth", rows.map(r => `${r.flow} ${r.average.toFixed(2)} GB/s (peak ${r.peak.toFixed(2)})`).join(", ")) : fact("Bandwidth", NOT_MEASURED, false));
  const devs = (a.platform.devices ?? []).filter(d => d.node === n.id);
  box.append(h("ul", { class: "platform-devices" }, ...devs.map(d => deviceItem(d, a.traffic))));
  return box;
}

/** The section's content. */
export function platformSection(a: PlatformAnswer, bw: BandwidthAnswer | null): HTMLElement {
  const p = a.platform;
  const root = h("div", { id: "platform-picture", "data-sockets": p.sockets.length, "data-nodes": p.nodes.length });
  root.append(h("h3", { text: `Platform (${p.source})` }));
  for (const note of [...a.notes, ...p.notes]) root.append(h("p", { class: "note", text: note }));
  const placed = new Set<number>();
  for (const s of p.sockets) {
    const nodes = p.nodes.filter(n => n.cpus.some(c => s.cpus.includes(c)) && !placed.has(n.id));
    nodes.forEach(n => placed.add(n.id));
    root.append(h("div", { class: "platform-socket", "data-socket": s.id }, h("h4", { text: `Socket ${s.id}: CPUs ${cpuList(s.cpus)}, ${s.cores} cores` }), ...nodes.map(n => nodeBox(a, n, bw))));
  }
  const rest = p.nodes.filter(n => !placed.has(n.id));
  if (rest.length) root.append(h("div", { class: "platform-socket", "data-socket": "none" }, h("h4", { text: p.sockets.length ? "Nodes without CPUs" : "Sockets unknown" }), ...rest.map(n => nodeBox(a, n, bw))));
  if (p.devices === null) root.append(h("p", { class: "platform-no-devices", text: "Devices unknown: this result kept no platform snapshot with devices (an imported recording, or a result older than snapshots)." }));
  else {
    const unknown = p.devices.filter(d => d.node === null);
    if (unknown.length) root.append(h("div", { class: "platform-node", "data-node": "unknown" }, h("h4", { text: "Devices with no known node" }), h("ul", { class: "platform-devices" }, ...unknown.map(d => deviceItem(d, a.traffic)))));
  }
  const list = h("ul", { id: "platform-findings" });
  for (const f of a.findings) list.append(h("li", { class: "platform-finding", "data-verdict": f.verdict, "data-device": f.device, text: f.sentence }));
  if (!a.findings.length) list.append(h("li", { class: "none", text: "No network, storage or accelerator device to check." }));
  root.append(h("h4", { text: "Topology check" }), list);
  return root;
}

/** The page's platform panel: follows the picked result. */
export class PlatformView {
  readonly el: HTMLElement;
  private latest = new Latest();
  private latestBw = new Latest();

  constructor(private store: Store, after: HTMLElement) {
    this.el = h("section", { id: "platform", class: "panel", hidden: true });
    after.after(this.el);
  }

  async refresh(): Promise<void> {
    const ok = shows(VIEWS.platform, this.store);
    this.el.hidden = !ok;
    if (!ok) { this.latest.cancel(); this.latestBw.cancel(); return; }
    try {
      const a = await this.latest.get<PlatformAnswer>("platform", { r: this.store.r });
      if (!a) return;
      // Bandwidth is optional: a result without a timeline, or an older server, has none.
      const bw = await this.latestBw.get<BandwidthAnswer>("bandwidth", { r: this.store.r }).catch(() => null);
      this.el.replaceChildren(platformSection(a, bw));
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }
}
