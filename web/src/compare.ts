// The compare view of two results: facts side by side, for two memory-access results their
// memory objects before and after, and a table of rows with shares, difference and ratio.

import { Latest, errorText } from "./api";
import { colorOf } from "./colors";
import { type CompareObjects, compareObjects } from "./compare-memory";
import { byId, clear, fillSelect, h, showError } from "./dom";
import { formatDiff, formatInt, formatRatio, formatShare, formatWeight } from "./format";
import type { Store } from "./state";
import type { CompareAnswer, CompareRows } from "./types";
import { VTable } from "./vtable";

/** With the memory objects of two memory-access results (null otherwise). */
type Answer = CompareAnswer & { objects?: CompareObjects | null };

export class CompareView {
  private readonly a = byId<HTMLSelectElement>("compare-a");
  private readonly b = byId<HTMLSelectElement>("compare-b");
  private readonly group = byId<HTMLSelectElement>("compare-group");
  private readonly facts = byId("compare-facts");
  private readonly status = byId("compare-status");
  /** The memory objects of two memory-access results, between the facts and the rows. */
  private readonly objects = h("div", { id: "compare-memory" });
  private readonly table: VTable<number>;
  private rows: CompareRows | null = null;
  private latest = new Latest();

  constructor(private readonly store: Store) {
    const r = (f: (rows: CompareRows, i: number) => string, cls = "") => (c: HTMLElement, i: number) => {
      c.textContent = this.rows ? f(this.rows, i) : "";
      if (cls) c.className = "vt-cell " + cls;
    };
    this.table = new VTable<number>(byId("compare-rows"), [
      { title: "Name", width: "minmax(200px, 3fr)", cls: "name", render: (c, i) => {
        const name = this.rows?.name[i] ?? "";
        const sw = h("span", { class: "swatch" });
        sw.style.background = colorOf(name, this.rows?.module[i] ?? "");
        c.append(sw, h("span", { class: "label", text: name }));
        c.title = name;
      } },
      { title: "Module", width: "minmax(80px, 1fr)", cls: "module", render: r((x, i) => x.module[i] ?? "") },
      { title: "A", width: "110px", cls: "num", render: r((x, i) => formatWeight(x.a[i], this.unit("a"))) },
      { title: "B", width: "110px", cls: "num", render: r((x, i) => formatWeight(x.b[i], this.unit("b"))) },
      { title: "A share", width: "80px", cls: "num", render: r((x, i) => formatShare(x.a_share[i])) },
      { title: "B share", width: "80px", cls: "num", render: r((x, i) => formatShare(x.b_share[i])) },
      { title: "Diff", width: "90px", cls: "num", render: (c, i) => {
        const d = this.rows?.diff[i] ?? 0;
        c.textContent = formatDiff(d);
        c.className = "vt-cell num " + (d > 0 ? "worse" : d < 0 ? "better" : "");
      } },
      { title: "Ratio B/A", width: "90px", cls: "num ratio", render: r((x, i) => formatRatio(x.ratio[i])) },
    ]);
    this.facts.after(this.objects);
    for (const sel of [this.a, this.b, this.group]) sel.addEventListener("change", () => void this.refresh());
  }

  /** Weight unit of side A or B (ns of CPU time, or an event's count). */
  private unit(side: "a" | "b"): string | undefined {
    return this.store.results[Number((side === "a" ? this.a : this.b).value)]?.weight_unit;
  }

  /** Fills the result pickers (first two results that opened) when the results are known. */
  init(): void {
    const opts = this.store.results.map(r => [String(r.id), `${r.id}: ${r.name}`] as [string, string]);
    const ok = this.store.results.filter(r => r.ok).map(r => String(r.id));
    fillSelect(this.a, opts, ok[0] ?? "0");
    fillSelect(this.b, opts, ok[1] ?? ok[0] ?? "1");
  }

  async refresh(): Promise<void> {
    if (this.store.mode !== "compare") return;
    const ra = this.store.results[Number(this.a.value)], rb = this.store.results[Number(this.b.value)];
    for (const r of [ra, rb]) if (r && !r.ok) { clear(this.objects); showError(this.facts, r.error || `The result ${r.path} could not be opened.`); this.table.setRows([]); return; }
    try {
      const d = await this.latest.get<Answer>("compare", { a: this.a.value, b: this.b.value, group: this.group.value });
      if (!d) return;
      this.render(d, ra?.name ?? "A", rb?.name ?? "B");
    } catch (e) {
      this.rows = null;
      this.table.setRows([]);
      this.status.textContent = "";
      clear(this.objects);
      showError(this.facts, errorText(e));
    }
  }

  private render(d: Answer, nameA: string, nameB: string): void {
    clear(this.facts);
    const t = h("table", { class: "facts grid" });
    const width = Math.max(4, d.columns?.length ?? 0, ...d.facts.map(f => f.length));
    const heads = Array.from({ length: width }, (_, i) => d.columns?.[i] ?? ["", "A", "B", "B vs A"][i] ?? "");
    heads[0] = heads[0] === "Figure" ? "" : heads[0]!;
    if (heads[1] === "A") heads[1] = "A: " + nameA;
    if (heads[2] === "B") heads[2] = "B: " + nameB;
    const hr = h("tr");
    heads.forEach((x, i) => hr.append(h("th", { class: i ? "num" : "", text: x })));
    t.append(h("thead", {}, hr));
    const body = h("tbody");
    // Figures neither result has (n/a on both sides: another analysis's) are only counted.
    const shown = d.facts.filter(f => !(f[1] === "n/a" && f[2] === "n/a"));
    for (const f of shown) {
      const tr = h("tr", { "data-figure": f[0] ?? "" }, h("th", { text: f[0] ?? "" }));
      for (let i = 1; i < width; i++) tr.append(h("td", { class: "num", text: f[i] ?? "" }));
      body.append(tr);
    }
    t.append(body);
    this.facts.append(t);
    const left = d.facts.length - shown.length;
    if (left) this.facts.append(h("p", { class: "note", text: `${left} figure${left === 1 ? "" : "s"} that neither result has ${left === 1 ? "is" : "are"} left out.` }));
    clear(this.objects);
    const objects = compareObjects(d.objects);
    if (objects) this.objects.append(objects);
    this.rows = d.rows;
    const n = d.rows.name.length;
    byId("compare").dataset.rows = String(n);
    this.status.textContent = `${formatInt(n)} rows, sorted by |B share − A share|`;
    this.table.setRows(Array.from({ length: n }, (_, i) => i));
  }
}
