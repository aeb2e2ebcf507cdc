// The header: result picker, Result/Compare tabs, time-assignment method, lane mode and the selection text.

import { byId, fillSelect } from "./dom";
import { formatTime } from "./format";
import type { LaneMode, Store } from "./state";

export class Header {
  private readonly result = byId<HTMLSelectElement>("result");
  private readonly method = byId<HTMLSelectElement>("method");
  private readonly laneMode = byId<HTMLSelectElement>("lane-mode");
  private readonly selection = byId("selection");
  private readonly clearSel = byId<HTMLButtonElement>("clear-selection");
  private readonly tabResult = byId<HTMLButtonElement>("tab-result");
  private readonly tabCompare = byId<HTMLButtonElement>("tab-compare");

  constructor(private readonly store: Store) {
    this.result.addEventListener("change", () => store.setResult(Number(this.result.value)));
    this.method.addEventListener("change", () => store.setMethod(this.method.value));
    this.laneMode.addEventListener("change", () => store.setLaneMode(this.laneMode.value as LaneMode));
    this.clearSel.addEventListener("click", () => store.setSelection(null));
    byId("clear-threads").addEventListener("click", () => store.clearThreads());
    this.tabResult.addEventListener("click", () => store.setMode("result"));
    this.tabCompare.addEventListener("click", () => store.setMode("compare"));
  }

  /** Called once the results are known. */
  init(): void {
    const opts = this.store.results.map(r => [String(r.id), `${r.id}: ${r.name}${r.ok ? (r.kind ? " (" + r.kind + ")" : "") : " (damaged)"}`] as [string, string]);
    fillSelect(this.result, opts, String(this.store.r));
    this.tabCompare.hidden = this.store.results.length < 2;
    this.result.title = this.store.result?.path ?? "";
  }

  /** Called when the result changes: its methods, and the fields that depend on it. */
  onResult(): void {
    const res = this.store.result;
    this.result.value = String(this.store.r);
    this.result.title = res?.path ?? "";
    const methods = res?.ok ? (res.methods ?? ["none"]) : ["none"];
    fillSelect(this.method, methods.map(m => [m, m] as [string, string]), this.store.method);
    this.method.disabled = methods.length < 2;
    this.method.title = res?.has_branches ? "how branch records are given times" : "this result has no branch records: only the samples themselves";
    this.laneMode.value = this.store.laneMode;
    this.onSelection();
    this.onThreads();
  }

  onSelection(): void {
    const s = this.store.selection;
    this.selection.textContent = s ? `selection: ${formatTime(s.from)} – ${formatTime(s.to)} (${formatTime(s.to - s.from)})` : "selection: whole result";
    this.selection.dataset.from = s ? String(Math.round(s.from)) : "";
    this.selection.dataset.to = s ? String(Math.round(s.to)) : "";
    this.clearSel.disabled = !s;
    byId<HTMLButtonElement>("zoom-selection").disabled = !s;
  }

  onThreads(): void {
    const tids = this.store.tids;
    const names = tids.map(t => {
      const th = this.store.result?.threads?.find(x => x.tid === t);
      return th ? `${th.name} (${t})` : String(t);
    });
    byId("threads-filter").textContent = tids.length ? "threads: " + names.join(", ") : "";
    byId("threads-box").hidden = tids.length === 0;
  }

  onMode(): void {
    const compare = this.store.mode === "compare";
    this.tabResult.classList.toggle("active", !compare);
    this.tabCompare.classList.toggle("active", compare);
    this.tabResult.setAttribute("aria-selected", String(!compare));
    this.tabCompare.setAttribute("aria-selected", String(compare));
    byId("result-view").hidden = compare;
    byId("compare").hidden = !compare;
    for (const id of ["result-controls"]) byId(id).hidden = compare;
  }
}
