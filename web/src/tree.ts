// Bottom-up and top-down trees: lazily expanded nodes kept as a flat array of visible rows in a VTable.

import { ApiError, Latest, errorText, getJson, isAbort } from "./api";
import { colorOf } from "./colors";
import { byId, h, showError, clear } from "./dom";
import { formatInt, formatShare, formatWeight, weightUnit } from "./format";
import type { Store } from "./state";
import type { TreeAnswer } from "./types";
import { VTable, type Column } from "./vtable";

export interface TNode {
  id: number; name: string; module: string; self: number; total: number; count: number;
  hasChildren: boolean; depth: number; path: number[];
  expanded: boolean; children: TNode[] | null; loading: boolean;
}

function nodesOf(d: TreeAnswer, parent: TNode | null): TNode[] {
  const r = d.rows;
  const out: TNode[] = new Array(r.id.length);
  for (let i = 0; i < r.id.length; i++) {
    out[i] = {
      id: r.id[i]!, name: r.name[i] ?? "?", module: r.module[i] ?? "", self: r.self[i] ?? 0,
      total: r.total[i] ?? 0, count: r.count[i] ?? 0, hasChildren: !!r.has_children[i],
      depth: parent ? parent.depth + 1 : 0, path: parent ? [...parent.path, r.id[i]!] : [r.id[i]!],
      expanded: false, children: null, loading: false,
    };
  }
  return out;
}

/** The visible descendants of an expanded node, in display order. */
function visibleBelow(node: TNode, out: TNode[] = []): TNode[] {
  for (const c of node.children ?? []) {
    out.push(c);
    if (c.expanded && c.children) visibleBelow(c, out);
  }
  return out;
}

export class TreeView {
  private readonly el = byId("tree");
  private readonly status = byId("tree-status");
  private readonly table: VTable<TNode>;
  kind: "bottom-up" | "top-down" = "bottom-up";
  group = "function";
  private flat: TNode[] = [];
  private totalWeight = 1;
  private latest = new Latest();
  private expandCtrl = new AbortController();
  /** Paths (ids joined by commas) the user has open, re-opened after a refresh. */
  private open = new Set<string>();
  private statusText = "";
  /** Sort order of every level: a node field and a direction. Server order is total, descending. */
  private sortKey: "name" | "module" | "self" | "total" | "count" = "total";
  private sortDesc = true;

  constructor(private readonly store: Store) {
    const cols: Column<TNode>[] = [
      { title: "Name", width: "minmax(200px, 3fr)", cls: "name", render: (c, n) => this.nameCell(c, n) },
      { title: "Module", width: "minmax(80px, 1fr)", cls: "module", render: (c, n) => { c.textContent = n.module; c.title = n.module; } },
      { title: "Self", width: "130px", cls: "num", render: (c, n) => { c.textContent = formatWeight(n.self, this.store.weightUnit); c.dataset.value = String(n.self); } },
      { title: "Total", width: "230px", cls: "num share", render: (c, n) => this.totalCell(c, n) },
      { title: "Samples", width: "90px", cls: "num", render: (c, n) => { c.textContent = formatInt(n.count); } },
    ];
    const tableHost = h("div", { class: "tree-host" });
    clear(this.el);
    this.el.append(tableHost);
    this.table = new VTable<TNode>(tableHost, cols, {
      onClick: (n, _i, target) => { if (target.closest(".twisty") || target.closest(".name")) void this.toggle(n); },
      onKey: (e, i) => {
        const n = this.flat[i]!;
        if (e.key === "ArrowRight" && n.hasChildren && !n.expanded) { void this.toggle(n); return true; }
        if (e.key === "ArrowLeft" && n.expanded) { void this.toggle(n); return true; }
        if (e.key === "Enter" && n.hasChildren) { void this.toggle(n); return true; }
        return false;
      },
      rowClass: n => (n.depth === 0 ? "top" : ""),
      onSort: col => this.sortBy(col),
    });
    this.table.markSorted(3, true);
  }

  private nameCell(c: HTMLElement, n: TNode): void {
    c.style.paddingLeft = 4 + n.depth * 14 + "px";
    const tw = h("span", { class: "twisty" + (n.hasChildren ? "" : " leaf"), text: n.loading ? "…" : n.hasChildren ? (n.expanded ? "▾" : "▸") : "" });
    const sw = h("span", { class: "swatch" });
    sw.style.background = colorOf(n.name, n.module);
    c.append(tw, sw, h("span", { class: "label", text: n.name }));
    c.title = n.name;
  }

  private totalCell(c: HTMLElement, n: TNode): void {
    const share = n.total / this.totalWeight;
    const bar = h("span", { class: "bar" });
    bar.style.width = Math.max(0, Math.min(100, share * 100)) + "%";
    c.append(bar, h("span", { text: `${formatWeight(n.total, this.store.weightUnit)} (${formatShare(share)})` }));
  }

  private params(path: number[]): Record<string, string | number | undefined> {
    return {
      r: this.store.r, kind: this.kind, group: this.group, path: path.join(","),
      ...this.store.selParams, method: this.store.methodParam, tids: this.store.tidsParam,
    };
  }

  /** Re-fetches the top level for the current result, selection, method, kind and grouping. */
  async refresh(keepOpen = true): Promise<void> {
    this.expandCtrl.abort();
    this.expandCtrl = new AbortController();
    if (!keepOpen) this.open.clear();
    const res = this.store.result;
    if (!res || !res.ok) {
      this.latest.cancel();
      this.flat = [];
      this.table.setRows([]);
      this.status.textContent = "";
      return;
    }
    const unit = weightUnit(this.store.weightUnit, res.event);
    try {
      const d = await this.latest.get<TreeAnswer>("tree", this.params([]));
      if (!d) return;
      this.el.querySelector(".error")?.remove();
      this.totalWeight = d.total_weight || 1;
      this.flat = nodesOf(d, null);
      if (!this.serverOrder) this.sortLevel(this.flat);
      this.statusText = `${formatInt(this.flat.length)} top-level rows · total ${this.store.weightUnit === "ns" ? formatWeight(d.total_weight, "ns") : formatInt(d.total_weight) + " " + unit} · ${formatInt(d.total_count)} samples`;
      this.showCount();
      this.table.setRows(this.flat, keepOpen);
      const signal = this.expandCtrl.signal;
      await Promise.all(this.flat.filter(n => this.open.has(n.path.join(","))).slice(0, 50).map(n => this.expand(n, signal)));
    } catch (e) {
      this.flat = [];
      this.table.setRows([]);
      this.el.dataset.rows = "0";
      this.status.textContent = "";
      this.el.querySelector(".error")?.remove();
      this.el.prepend(h("div", { class: "error", role: "alert", text: errorText(e) }));
    }
  }

  async toggle(n: TNode): Promise<void> {
    if (!n.hasChildren || n.loading) return;
    const key = n.path.join(",");
    if (n.expanded) {
      this.open.delete(key);
      n.expanded = false;
      const i = this.flat.indexOf(n);
      let j = i + 1;
      while (j < this.flat.length && this.flat[j]!.depth > n.depth) j++;
      this.flat.splice(i + 1, j - i - 1);
      this.showCount();
      this.table.setRows(this.flat, true);
      return;
    }
    this.open.add(key);
    await this.expand(n, this.expandCtrl.signal);
  }

  private async expand(n: TNode, signal: AbortSignal): Promise<void> {
    if (!n.children) {
      n.loading = true;
      this.table.render();
      try {
        const d = await getJson<TreeAnswer>("tree", this.params(n.path), signal);
        n.children = nodesOf(d, n);
        if (!this.serverOrder) this.sortLevel(n.children);
      } catch (e) {
        if (!isAbort(e)) showError(this.status, e instanceof ApiError ? e.message : errorText(e));
        return;
      } finally {
        n.loading = false;
      }
      if (signal.aborted) return;
    }
    const i = this.flat.indexOf(n);
    if (i < 0) return;
    n.expanded = true;
    const below = visibleBelow(n);
    // concat rather than splice(...spread): a node may have 100,000 children.
    this.flat = this.flat.slice(0, i + 1).concat(below, this.flat.slice(i + 1));
    this.showCount();
    this.table.setRows(this.flat, true);
    const again = (n.children ?? []).filter(c => !c.expanded && this.open.has(c.path.join(",")));
    await Promise.all(again.slice(0, 50).map(c => this.expand(c, signal)));
  }

  private sortBy(col: number): void {
    const keys = ["name", "module", "self", "total", "count"] as const;
    const key = keys[col] ?? "total";
    this.sortDesc = key === this.sortKey ? !this.sortDesc : key !== "name" && key !== "module";
    this.sortKey = key;
    this.table.markSorted(col, this.sortDesc);
    const top = this.flat.filter(n => n.depth === 0);
    this.sortLevel(top);
    const flat: TNode[] = [];
    for (const n of top) {
      flat.push(n);
      if (n.expanded) visibleBelow(n, flat);
    }
    this.flat = flat;
    this.table.setRows(this.flat, true);
  }

  /** Sorts nodes (and their loaded children, recursively) by the current key; ties by name. */
  private sortLevel(nodes: TNode[]): void {
    const k = this.sortKey, dir = this.sortDesc ? -1 : 1;
    const text = k === "name" || k === "module";
    nodes.sort((a, b) => {
      const c = text ? (a[k] as string).localeCompare(b[k] as string) : (a[k] as number) - (b[k] as number);
      return c !== 0 ? c * dir : a.name.localeCompare(b.name);
    });
    for (const n of nodes) if (n.children) this.sortLevel(n.children);
  }

  private get serverOrder(): boolean { return this.sortKey === "total" && this.sortDesc; }

  /** data-rows (the rows there are to scroll through) and the status line. */
  private showCount(): void {
    this.el.dataset.rows = String(this.flat.length);
    const top = this.flat.filter(n => n.depth === 0).length;
    this.status.textContent = this.statusText + (this.flat.length > top ? ` · ${formatInt(this.flat.length)} rows shown` : "");
  }
}
