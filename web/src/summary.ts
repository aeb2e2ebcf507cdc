// The summary view: facts table, top functions by self weight, and the result's notes.

import { Latest, errorText } from "./api";
import { colorOf } from "./colors";
import { byId, clear, h, showError } from "./dom";
import { formatInt, formatShare, formatTime, formatWeight, weightUnit } from "./format";
import type { Store } from "./state";
import type { SummaryAnswer } from "./types";

export class Summary {
  private readonly el = byId("summary");
  private latest = new Latest();

  constructor(private readonly store: Store) {}

  async refresh(): Promise<void> {
    const res = this.store.result;
    if (!res) { clear(this.el); return; }
    if (!res.ok) {
      this.latest.cancel();
      showError(this.el, res.error || `The result ${res.path} could not be opened.`);
      return;
    }
    try {
      const d = await this.latest.get<SummaryAnswer>("summary", {
        r: this.store.r, ...this.store.selParams, method: this.store.methodParam, tids: this.store.tidsParam,
      });
      if (d) this.render(d);
    } catch (e) {
      showError(this.el, errorText(e));
    }
  }

  private render(d: SummaryAnswer): void {
    const res = this.store.result!;
    const unit = weightUnit(this.store.weightUnit, res.event);
    clear(this.el);
    const sel = this.store.selection;
    this.el.append(h("h2", { text: "Summary" + (sel ? ` of ${formatTime(sel.from)} – ${formatTime(sel.to)}` : "") }));
    const facts = h("table", { class: "facts" });
    const known = new Set(d.facts.map(f => f[0].toLowerCase()));
    const info: [string, string][] = [];
    if (res.command && !known.has("command")) info.push(["Command", res.command]);
    if (res.kind && !known.has("kind") && !known.has("result")) info.push(["Kind", res.kind]);
    for (const [k, v] of [...info, ...d.facts]) facts.append(h("tr", {}, h("th", { text: k }), h("td", { text: v })));
    this.el.append(facts);

    this.el.append(h("h3", { text: "Top functions by self " + (unit === "ns" ? "time" : unit) }));
    const top = h("table", { class: "top grid" });
    top.append(h("thead", {}, h("tr", {},
      h("th", { text: "Function" }), h("th", { text: "Module" }),
      h("th", { class: "num", text: unit === "ns" ? "Self time" : `Self (${unit})` }), h("th", { class: "num", text: "Share" }),
      h("th", { class: "num", text: "Samples" }))));
    const body = h("tbody");
    for (const f of d.top) {
      const bar = h("span", { class: "bar" });
      bar.style.width = Math.max(0, Math.min(100, f.self_share * 100)) + "%";
      const swatch = h("span", { class: "swatch" });
      swatch.style.background = colorOf(f.function, f.module);
      body.append(h("tr", {},
        h("td", { class: "name", title: f.function }, swatch, f.function),
        h("td", { class: "module", title: f.module, text: f.module }),
        h("td", { class: "num", text: formatWeight(f.self, this.store.weightUnit) }),
        h("td", { class: "num share" }, bar, h("span", { text: formatShare(f.self_share) })),
        h("td", { class: "num", text: formatInt(f.count) })));
    }
    if (d.top.length === 0) body.append(h("tr", {}, h("td", { colspan: 5, class: "empty", text: "No samples in this range." })));
    top.append(body);
    this.el.append(top);

    const notes = [...(d.notes ?? []), ...(res.notes ?? [])];
    if (notes.length) {
      this.el.append(h("h3", { text: "Notes" }));
      const ul = h("ul", { class: "notes" });
      for (const n of notes) ul.append(h("li", { text: n }));
      this.el.append(ul);
    }
  }
}
