// Entry point of the `kairos view` page: loads the results and wires the views to the shared state.

import { errorText, getJson, hold } from "./api";
import { BandwidthView } from "./bandwidth";
import { IoView } from "./io";
import { CompareView } from "./compare";
import { Counters } from "./counters";
import { byId, clear, showError } from "./dom";
import { keepHash, readHash } from "./hash";
import { Header } from "./header";
import { Inspector } from "./inspector";
import { MemoryView } from "./memory";
import { PlatformView } from "./platform";
import { RequestsView } from "./requests";
import { Store } from "./state";
import { Summary } from "./summary";
import { Timeline } from "./timeline";
import { attachTimelineInput } from "./timeline-input";
import { TreeView } from "./tree";
import type { ResultsAnswer } from "./types";
import { shows, VIEWS } from "./views";

function setupTreeControls(tree: TreeView): void {
  const bu = byId<HTMLButtonElement>("tree-bottom-up"), td = byId<HTMLButtonElement>("tree-top-down");
  const group = byId<HTMLSelectElement>("group");
  const sync = (): void => {
    bu.classList.toggle("active", tree.kind === "bottom-up");
    td.classList.toggle("active", tree.kind === "top-down");
    bu.setAttribute("aria-selected", String(tree.kind === "bottom-up"));
    td.setAttribute("aria-selected", String(tree.kind === "top-down"));
  };
  bu.addEventListener("click", () => { tree.kind = "bottom-up"; sync(); void tree.refresh(false); });
  td.addEventListener("click", () => { tree.kind = "top-down"; sync(); void tree.refresh(false); });
  group.addEventListener("change", () => { tree.group = group.value; void tree.refresh(false); });
  sync();
}

/** Shows the sections of the views that show (see views.ts), none of them for a result that
 *  could not be opened; names the other broken results. */
function showBroken(store: Store): void {
  byId("timeline-section").hidden = !shows(VIEWS.timeline, store);
  byId("inspector").hidden = !shows(VIEWS.inspector, store);
  byId("tree-section").hidden = !shows(VIEWS.trees, store);
  const others = store.results.filter((r, i) => !r.ok && i !== store.r);
  const box = byId("page-error");
  if (others.length) showError(box, others.map(r => `${r.name}: ${r.error ?? "could not be opened"}`).join(" "));
  else clear(box);
}

/** What main needs of an analysis's view. */
interface AnalysisView {
  refresh(): Promise<void>;
  /** Redraws after the timeline's range or thread filter changed (views drawn on its time axis). */
  followTimeline?(): void;
}

async function start(): Promise<void> {
  const release = hold();
  const store = new Store();
  const header = new Header(store);
  const timeline = new Timeline(store);
  const summary = new Summary(store);
  const tree = new TreeView(store);
  const counters = new Counters(store);
  const memory = new MemoryView(store);
  const platform = new PlatformView(store, byId("memory"));
  const bandwidth = new BandwidthView(store);
  const io = new IoView(store);
  const requests = new RequestsView(store, timeline);
  // The views of one analysis each: reloaded when the result or the mode changes, redrawn
  // (those that follow the timeline) when its range or thread filter does. A new view is
  // one entry here and one line in views.ts.
  const analysisViews: AnalysisView[] = [counters, memory, bandwidth, io, requests, platform];
  const compare = new CompareView(store);
  const inspector = new Inspector(store, (lane, t) => { timeline.marker = { key: lane, t }; timeline.draw(); });
  attachTimelineInput(timeline, store, (lane, t) => void inspector.show({ lane: lane.key, laneLabel: lane.label, t }));
  setupTreeControls(tree);

  store.on("result", () => {
    header.onResult();
    showBroken(store);
    inspector.reset();
    timeline.reset();
    void summary.refresh();
    void tree.refresh(false);
    for (const v of analysisViews) void v.refresh();
  });
  store.on("method", () => {
    timeline.schedule();
    void summary.refresh();
    void tree.refresh();
    void inspector.show();
  });
  store.on("method2", () => { timeline.schedule(); void inspector.show(); });
  store.on("lanes", () => { timeline.reset(); });
  store.on("threads", () => {
    header.onThreads();
    timeline.schedule();
    void summary.refresh();
    void tree.refresh();
    for (const v of analysisViews) v.followTimeline?.();
  });
  store.on("view", () => {
    timeline.draw();
    for (const v of analysisViews) v.followTimeline?.();
    timeline.schedule();
    if (!store.selection) { counters.schedule(); memory.schedule(); }
  });
  store.on("selection", () => {
    header.onSelection();
    timeline.draw();
    void summary.refresh();
    void tree.refresh();
    counters.schedule();
    memory.schedule();
  });
  store.on("mode", () => {
    header.onMode();
    showBroken(store);
    void compare.refresh();
    for (const v of analysisViews) void v.refresh();
  });

  try {
    const d = await getJson<ResultsAnswer>("results");
    store.results = d.results ?? [];
    if (!store.results.length) throw new Error("The server has no results to show; start it with `kairos view -r DIR`.");
    header.init();
    compare.init();
    const wanted = readHash();
    const first = store.results.findIndex(r => r.ok);
    if (wanted.r !== null && wanted.r < store.results.length) store.setResult(wanted.r, wanted.start);
    else store.setResult(first >= 0 ? first : 0);
    if (wanted.mode === "compare" && store.results.length >= 2) store.setMode("compare");
    else header.onMode();
    keepHash(store);
  } catch (e) {
    showError(byId("page-error"), errorText(e));
  } finally {
    release();
  }
}

window.addEventListener("error", e => {
  if (/ResizeObserver loop/.test(e.message)) return; // benign: layout settled on the next frame
  showError(byId("page-error"), "The page hit an error: " + e.message);
});
window.addEventListener("unhandledrejection", e => showError(byId("page-error"), "The page hit an error: " + errorText(e.reason)));
void start();
