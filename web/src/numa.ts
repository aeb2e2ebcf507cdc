// The NUMA part of a memory-access result: the machine's nodes and how placement was learnt,
// per memory object its pages by node (a bar split by node), the nodes of the threads that use
// it, its estimated remote share and who first touched it; one sentence per problem with its
// fix; the placement queries over time (pages per node).

import { CHART_H, PAD_L, frame, polyline, setupCanvas, timeLabels } from "./chart";
import { colorOf } from "./colors";
import { h } from "./dom";
import { formatInt, formatShare } from "./format";
import type { NumaAnswer, NumaObject } from "./types";

/** A stable colour per node, distinct from the object colours' hues by name. */
function nodeColor(node: string): string {
  return colorOf("numa node " + node);
}

/** `0: 4, 1: 4` from a per-node map. */
function perNode(m: Record<string, number>): string {
  return Object.entries(m).filter(([, v]) => v > 0).map(([k, v]) => `${k}: ${formatInt(v)}`).join(", ");
}

/** A horizontal bar split into the object's pages per node, with each node's count in its title. */
function pagesBar(o: NumaObject, nodes: string[]): HTMLElement {
  const bar = h("div", { class: "numa-bar", "aria-label": `pages by node: ${perNode(o.pages)}` });
  const total = Math.max(1, o.pages_total);
  for (const n of nodes) {
    const v = o.pages[n] ?? 0;
    if (!v) continue;
    const seg = h("span", { class: "numa-seg", "data-node": n, "data-pages": v, title: `node ${n}: ${formatInt(v)} pages (${formatShare(v / total)})` });
    seg.style.width = `${(100 * v) / total}%`;
    seg.style.background = nodeColor(n);
    bar.append(seg);
  }
  return bar;
}

function objectsTable(d: NumaAnswer, nodes: string[]): HTMLElement {
  const heads = ["Object", "Pages by node", "Pages", ...nodes.map(n => `Node ${n}`), "Huge", "Threads by node", "Samples", "Remote (est.)", "First touch"];
  const tr = h("tr");
  heads.forEach(x => tr.append(h("th", { text: x })));
  const body = h("tbody");
  for (const o of d.objects) {
    const first = o.first_touch ? `thread ${o.first_touch.tid} in ${o.first_touch.function} (node ${o.first_touch.node})` +
      (o.touching_threads > 1 ? ` and ${o.touching_threads - 1} more` : "") : "";
    const row = h("tr", { "data-object": o.id },
      h("td", { title: o.label ?? o.name, text: o.name }),
      h("td", {}, pagesBar(o, nodes)),
      h("td", { class: "num", text: formatInt(o.pages_total) }));
    for (const n of nodes) row.append(h("td", { class: "num node-pages", "data-node": n, text: formatInt(o.pages[n] ?? 0) }));
    row.append(
      h("td", { class: "num", text: formatInt(o.huge_pages) }),
      h("td", { class: "threads", text: perNode(o.threads) }),
      h("td", { class: "num", text: formatInt(o.samples) }),
      h("td", { class: "num remote", text: o.remote === null ? "—" : formatShare(o.remote) }),
      h("td", { class: "first-touch", title: first, text: first }));
    body.append(row);
  }
  if (!d.objects.length) body.append(h("tr", {}, h("td", { colspan: heads.length, class: "empty", text: "No memory object has placed pages or sampled accesses." })));
  const more = d.objects_total > d.objects.length ? ` (the first ${d.objects.length} of ${formatInt(d.objects_total)})` : "";
  return h("div", {}, h("h3", { text: "Memory objects by node" + more }),
    h("table", { class: "grid numa-objects" }, h("thead", {}, tr), body));
}

function touchTable(d: NumaAnswer): HTMLElement {
  const tr = h("tr");
  ["Object", "Thread", "CPU", "Node", "Pages", "Function", "Call stack"].forEach(x => tr.append(h("th", { text: x })));
  const body = h("tbody");
  for (const t of d.touchers) {
    body.append(h("tr", { "data-object": t.object, "data-tid": t.tid },
      h("td", { text: t.name }), h("td", { class: "num", text: String(t.tid) }), h("td", { class: "num", text: String(t.cpu) }),
      h("td", { class: "num", text: t.node }), h("td", { class: "num", text: formatInt(t.pages) }),
      h("td", { text: t.function }), h("td", { class: "stack", title: t.stack, text: t.stack })));
  }
  return h("details", { id: "numa-touch" }, h("summary", { text: `First touch: ${formatInt(d.touchers.length)} threads and call stacks that placed the pages` }),
    h("table", { class: "grid numa-touch" }, h("thead", {}, tr), body));
}

/** Pages per node at each placement query, one line per node. */
function drawPlacement(c: HTMLCanvasElement, d: NumaAnswer, nodes: string[]): void {
  const ctx = setupCanvas(c, CHART_H);
  c.dataset.queries = String(d.timeline.length);
  if (!ctx) return;
  const pw = c.clientWidth - PAD_L - 8, ph = CHART_H - 24;
  let max = 0;
  for (const q of d.timeline) for (const n of nodes) max = Math.max(max, q.nodes[n] ?? 0);
  frame(ctx, formatInt(max) + " pages", pw, ph);
  const last = d.timeline.length ? d.timeline[d.timeline.length - 1]!.t : 0;
  timeLabels(ctx, { from: 0, to: Math.max(1, last) }, pw, ph);
  for (const n of nodes) {
    // One point per query, spread over the box: queries come every 0.1-2 s.
    polyline(ctx, d.timeline.map(q => q.nodes[n] ?? 0), max > 0 ? max * 1.05 : 1, pw, ph, nodeColor(n));
  }
}

/** The whole NUMA part, for the answer of `api/numa`, and its chart's drawing (to call once it is in the page). */
export function numaSection(d: NumaAnswer): [HTMLElement, () => void] {
  const nodes = d.nodes.length ? d.nodes.map(n => String(n.id)) : [...new Set(d.objects.flatMap(o => Object.keys(o.pages)))].sort();
  const box = h("section", { id: "numa", "data-nodes": d.nodes_with_cpus, "data-recorded": d.recorded });
  box.append(h("h2", { text: "NUMA placement" }));
  const facts = h("table", { id: "numa-facts", class: "facts" });
  for (const [k, v] of d.facts) facts.append(h("tr", { "data-fact": k }, h("th", { text: k }), h("td", { text: v })));
  box.append(facts);
  const problems = h("ul", { id: "numa-problems" });
  for (const p of d.problems) problems.append(h("li", { class: "numa-problem", "data-object": p.object, "data-kind": p.kind, text: p.sentence + "." }));
  for (const p of d.unjudged) problems.append(h("li", { class: "numa-unjudged", "data-object": p.object, text: "Not judged: " + p.sentence + "." }));
  if (!d.problems.length) {
    const why = d.nodes_with_cpus === 1 ? "One NUMA node: every access is local, so no placement problem is possible."
      : d.nodes_with_cpus === 0 ? "The machine's nodes are not in this result: no placement problem can be judged."
        : "No object has its pages away from the threads that use it.";
    problems.append(h("li", { class: "none", text: why }));
  }
  box.append(h("h3", { text: "Problems" }), problems);
  const legend = h("div", { class: "legend" });
  for (const n of nodes) {
    const s = h("span", { class: "swatch" });
    s.style.background = nodeColor(n);
    legend.append(h("span", {}, s, `node ${n}`));
  }
  const c = h("canvas", { id: "numa-placement", class: "counter-chart", "aria-label": "pages per node at each placement query" });
  box.append(objectsTable(d, nodes), legend,
    h("figure", {}, h("figcaption", { text: `Pages per node at each of the ${formatInt(d.timeline.length)} placement queries` }), c),
    touchTable(d));
  if (d.notes.length) {
    const ul = h("ul", { class: "notes" });
    for (const n of d.notes) ul.append(h("li", { text: n }));
    box.append(ul);
  }
  return [box, () => drawPlacement(c, d, nodes)];
}
