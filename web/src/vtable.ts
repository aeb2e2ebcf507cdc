// A virtualised table: fixed row height, a spacer sized rows×height, only the visible rows in the DOM.

import { clear, h } from "./dom";

export interface Column<R> {
  title: string;
  width: string;
  cls?: string;
  render(cell: HTMLElement, row: R, index: number): void;
}

export interface VTableOptions<R> {
  rowHeight?: number;
  onClick?: (row: R, index: number, target: HTMLElement, e: MouseEvent) => void;
  onKey?: (e: KeyboardEvent, index: number) => boolean;
  rowClass?: (row: R, index: number) => string;
  /** Called with the column index when a column heading is clicked. */
  onSort?: (column: number) => void;
}

const OVERSCAN = 8;

export class VTable<R> {
  readonly root: HTMLElement;
  readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly head: HTMLElement;
  private readonly pool: HTMLElement[] = [];
  private rows: R[] = [];
  readonly rowH: number;
  /** Index of the highlighted row (keyboard cursor), -1 for none. */
  cursor = -1;
  private frame = 0;

  constructor(container: HTMLElement, private readonly columns: Column<R>[], private readonly opts: VTableOptions<R> = {}) {
    this.rowH = opts.rowHeight ?? 22;
    const template = columns.map(c => c.width).join(" ");
    const head = h("div", { class: "vt-head", role: "row" });
    columns.forEach((c, i) => {
      const cell = h("div", { class: "vt-cell " + (c.cls ?? ""), role: "columnheader", text: c.title });
      if (opts.onSort) {
        cell.classList.add("sortable");
        cell.title = "sort by " + c.title.toLowerCase();
        cell.addEventListener("click", () => opts.onSort!(i));
      }
      head.append(cell);
    });
    this.head = head;
    this.spacer = h("div", { class: "vt-spacer" });
    this.scroller = h("div", { class: "vt-scroll", tabindex: 0, role: "rowgroup" }, this.spacer);
    this.root = h("div", { class: "vtable", role: "table" }, head, this.scroller);
    this.root.style.setProperty("--vt-cols", template);
    this.root.style.setProperty("--vt-row-h", this.rowH + "px");
    clear(container);
    container.append(this.root);
    this.scroller.addEventListener("scroll", () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(this.scroller);
    this.scroller.addEventListener("click", e => {
      const rowEl = (e.target as HTMLElement).closest<HTMLElement>(".vt-row");
      if (!rowEl || !opts.onClick) return;
      const i = Number(rowEl.dataset.index);
      const row = this.rows[i];
      if (row === undefined) return;
      this.cursor = i;
      opts.onClick(row, i, e.target as HTMLElement, e);
      this.render();
    });
    this.scroller.addEventListener("keydown", e => this.key(e));
  }

  get length(): number { return this.rows.length; }

  /** Marks the heading of the sorted column with an arrow. */
  markSorted(column: number, descending: boolean): void {
    Array.from(this.head.children).forEach((el, i) => {
      el.setAttribute("aria-sort", i === column ? (descending ? "descending" : "ascending") : "none");
      el.textContent = this.columns[i]!.title + (i === column ? (descending ? " ▼" : " ▲") : "");
    });
  }

  /** Replaces the rows; `keepScroll` leaves the scroll position as it is. */
  setRows(rows: R[], keepScroll = false): void {
    this.rows = rows;
    this.spacer.style.height = rows.length * this.rowH + "px";
    if (!keepScroll) { this.scroller.scrollTop = 0; this.cursor = -1; }
    if (this.cursor >= rows.length) this.cursor = rows.length - 1;
    this.render();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
  }

  /** Draws the rows in view (plus a few either side), reusing row elements. */
  render(): void {
    const n = this.rows.length;
    const top = this.scroller.scrollTop;
    const height = this.scroller.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / this.rowH) - OVERSCAN);
    const last = Math.min(n, Math.ceil((top + height) / this.rowH) + OVERSCAN);
    const need = Math.max(0, last - first);
    while (this.pool.length < need) {
      const el = h("div", { class: "vt-row", role: "row" });
      for (const c of this.columns) el.append(h("div", { class: "vt-cell " + (c.cls ?? ""), role: "cell" }));
      this.pool.push(el);
      this.scroller.append(el);
    }
    while (this.pool.length > need) this.pool.pop()!.remove();
    for (let k = 0; k < need; k++) {
      const i = first + k;
      const el = this.pool[k]!;
      const row = this.rows[i]!;
      el.dataset.index = String(i);
      el.style.transform = `translateY(${i * this.rowH}px)`;
      el.className = "vt-row" + (i === this.cursor ? " cursor" : "") + (this.opts.rowClass ? " " + this.opts.rowClass(row, i) : "");
      this.columns.forEach((c, j) => {
        const cell = el.children[j] as HTMLElement;
        clear(cell);
        c.render(cell, row, i);
      });
    }
  }

  scrollToIndex(i: number): void {
    const y = i * this.rowH;
    const s = this.scroller;
    if (y < s.scrollTop) s.scrollTop = y;
    else if (y + this.rowH > s.scrollTop + s.clientHeight) s.scrollTop = y + this.rowH - s.clientHeight;
  }

  private key(e: KeyboardEvent): void {
    const n = this.rows.length;
    if (!n) return;
    const page = Math.max(1, Math.floor(this.scroller.clientHeight / this.rowH) - 1);
    let c = this.cursor;
    switch (e.key) {
      case "ArrowDown": c = Math.min(n - 1, c + 1); break;
      case "ArrowUp": c = Math.max(0, c - 1); break;
      case "PageDown": c = Math.min(n - 1, c + page); break;
      case "PageUp": c = Math.max(0, c - page); break;
      case "Home": c = 0; break;
      case "End": c = n - 1; break;
      default:
        if (this.opts.onKey && c >= 0 && this.opts.onKey(e, c)) { e.preventDefault(); this.render(); }
        return;
    }
    e.preventDefault();
    this.cursor = c;
    this.scrollToIndex(c);
    this.render();
  }
}
