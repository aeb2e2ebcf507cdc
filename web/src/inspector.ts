// The sample inspector: a picked sample's facts, its stack (leaf first) and its branch records with times per method.

import { Latest, errorText } from "./api";
import { colorOf } from "./colors";
import { byId, clear, fillSelect, h, showError } from "./dom";
import { formatInt, formatTime, formatWeight, weightUnit } from "./format";
import type { Store } from "./state";
import type { BranchRecord, SampleAnswer } from "./types";

/** The branch method for record times when the header says `none`: the API's default too
 * (Method::DEFAULT in crates/analysis/time-assignment). */
const DEFAULT_BRANCH_METHOD = "covered";

export interface Pick { lane: string; laneLabel: string; t: number }

export class Inspector {
  private readonly el = byId("inspector-body");
  private readonly method2 = byId<HTMLSelectElement>("method2");
  private latest = new Latest();
  private pick: Pick | null = null;

  constructor(private readonly store: Store, private readonly onShown: (lane: string, t: number) => void) {
    this.method2.addEventListener("change", () => store.setMethod2(this.method2.value));
  }

  /** Called when the result changes: forget the sample and offer the result's methods. */
  reset(): void {
    this.pick = null;
    this.latest.cancel();
    const res = this.store.result;
    const methods = (res?.methods ?? []).filter(m => m !== "none");
    fillSelect(this.method2, [["", "—"], ...methods.map(m => [m, m] as [string, string])], "");
    this.method2.disabled = !res?.has_branches;
    clear(this.el);
    this.el.append(h("p", { class: "hint", text: "Click a lane of the timeline to inspect the sample nearest that time." }));
  }

  /** The methods whose record times are shown: the header's method (or the default branch method, covered, for none) and method2. */
  methods(): string[] {
    const res = this.store.result;
    if (!res?.has_branches) return [];
    const avail = (res.methods ?? []).filter(m => m !== "none");
    let first = this.store.method;
    if (first === "none" || !avail.includes(first)) first = avail.includes(DEFAULT_BRANCH_METHOD) ? DEFAULT_BRANCH_METHOD : (avail[0] ?? "");
    const out = first ? [first] : [];
    if (this.store.method2 && this.store.method2 !== first && avail.includes(this.store.method2)) out.push(this.store.method2);
    return out;
  }

  async show(p: Pick | null = this.pick): Promise<void> {
    this.pick = p;
    if (!p) return;
    const ms = this.methods();
    try {
      const d = await this.latest.get<SampleAnswer>("sample", {
        r: this.store.r, lane: p.lane, t: Math.round(p.t), methods: ms.length ? ms.join(",") : undefined,
      });
      if (!d) return;
      this.render(d, p);
      this.onShown(p.lane, d.time_ns);
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }

  private render(d: SampleAnswer, p: Pick): void {
    const res = this.store.result!;
    const thread = res.threads?.find(t => t.tid === d.tid);
    clear(this.el);
    const facts = h("table", { class: "facts" });
    const rows: [string, string][] = [
      ["Sample", "#" + formatInt(d.index)],
      ["Time", formatTime(d.time_ns)],
      ["Thread", thread ? `${thread.name} (${d.tid}), process ${thread.process} (${thread.pid})` : String(d.tid)],
      ["CPU", d.cpu === null ? "—" : String(d.cpu)],
      ["Weight", res.weight_unit === "ns" ? formatWeight(d.weight, "ns") : `${formatInt(d.weight)} ${weightUnit(res.weight_unit, res.event)}`],
      ["Lane", p.laneLabel],
    ];
    for (const [k, v] of rows) facts.append(h("tr", {}, h("th", { text: k }), h("td", { text: v })));
    this.el.append(facts);

    this.el.append(h("h3", { text: `Stack (leaf first, ${d.stack.length} frames)` }));
    const st = h("table", { class: "grid stack" });
    st.append(h("thead", {}, h("tr", {}, h("th", { text: "#" }), h("th", { text: "Function" }), h("th", { text: "Module" }), h("th", { text: "Source" }))));
    const sb = h("tbody");
    d.stack.forEach((f, i) => {
      const sw = h("span", { class: "swatch" });
      sw.style.background = colorOf(f.function, f.module);
      sb.append(h("tr", {}, h("td", { class: "num", text: String(i) }), h("td", { class: "name" }, sw, f.function),
        h("td", { class: "module", text: f.module }), h("td", { text: f.file ? `${f.file}${f.line ? ":" + f.line : ""}` : "" })));
    });
    st.append(sb);
    this.el.append(st);
    this.renderBranches(d);
  }

  private renderBranches(d: SampleAnswer): void {
    this.el.append(h("h3", { text: `Branch records (${d.branches.length}, oldest first; times relative to the sample)` }));
    if (d.branches.length === 0) {
      this.el.append(h("p", { class: "note", text: d.note || "This sample has no branch records." }));
      return;
    }
    const t = h("table", { id: "branches", class: "grid branches" });
    const head = h("tr", {}, h("th", { class: "num", text: "Order" }), h("th", { text: "From" }), h("th", { text: "" }),
      h("th", { text: "To" }), h("th", { text: "Kind" }), h("th", { class: "num", text: "Cycles" }), h("th", { text: "Mispredicted" }));
    d.methods.forEach(m => head.append(h("th", { class: "num time", "data-method": m, text: m, title: `time the ${m} method gives each record, relative to the sample (absolute time on hover over a cell)` })));
    t.append(h("thead", {}, head));
    const body = h("tbody");
    for (const b of d.branches) body.append(this.branchRow(b, d.methods.length, d.time_ns));
    t.append(body);
    this.el.append(t);
    if (d.note) this.el.append(h("p", { class: "note", text: d.note }));
  }

  private branchRow(b: BranchRecord, nMethods: number, at: number): HTMLTableRowElement {
    const from = h("span", { title: b.from_module, text: b.from_function });
    const to = h("span", { title: b.to_module ?? "", text: b.to_function });
    const tr = h("tr", { class: b.is_new ? "new" : "old", title: b.is_new ? "" : "already in the previous sample's records" },
      h("td", { class: "num", text: String(b.order) }), h("td", { class: "name" }, from), h("td", { class: "arrow", text: "→" }),
      h("td", { class: "name" }, to), h("td", { text: b.kind }), h("td", { class: "num", text: b.cycles === null ? "—" : formatInt(b.cycles) }),
      h("td", { class: b.mispredicted ? "bad" : "", text: b.mispredicted ? "yes" : "no" }));
    for (let k = 0; k < nMethods; k++) {
      const v = b.times[k];
      const rel = v === null || v === undefined ? "—" : (v - at > 0 ? "+" : v - at < 0 ? "−" : "") + formatTime(Math.abs(v - at));
      tr.append(h("td", { class: "num time", title: v === null || v === undefined ? "" : formatInt(v) + " ns", text: rel }));
    }
    return tr;
  }
}
