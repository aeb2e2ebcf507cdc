// Mouse and keyboard on the timeline: wheel zoom, pan, drag-select, click to pick a sample, hover tooltip.

import { byId } from "./dom";
import type { Store } from "./state";
import { LABEL_W, type Timeline } from "./timeline";
import type { Lane } from "./types";

type Drag = { kind: "select" | "pan"; x0: number; y0: number; from: number; to: number; moved: boolean; id: number };

/** Zooms the view by `factor` (<1 zooms in) keeping time `t` under the same pixel. */
export function zoomAround(store: Store, t: number, factor: number): void {
  const v = store.view;
  store.setView({ from: t - (t - v.from) * factor, to: t + (v.to - t) * factor });
}

export function panBy(store: Store, dt: number): void {
  const v = store.view;
  const full = store.full;
  const d = Math.max(full.from - v.from, Math.min(dt, full.to - v.to));
  store.setView({ from: v.from + d, to: v.to + d });
}

export function attachTimelineInput(tl: Timeline, store: Store, pick: (lane: Lane, t: number) => void): void {
  const c = tl.canvas;
  const tip = byId("tooltip");
  let drag: Drag | null = null;

  const local = (e: MouseEvent): [number, number] => {
    const r = c.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };

  c.addEventListener("wheel", e => {
    e.preventDefault();
    const [x] = local(e);
    const scale = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 400 : 1;
    const dx = e.deltaX * scale, dy = e.deltaY * scale;
    const v = store.view;
    if (Math.abs(dx) > Math.abs(dy) || (e.shiftKey && dy !== 0)) {
      panBy(store, ((e.shiftKey ? dy : dx) / tl.plotWidth) * (v.to - v.from));
      return;
    }
    const t = tl.tOf(Math.max(LABEL_W, x));
    zoomAround(store, t, Math.exp(Math.max(-2, Math.min(2, dy * 0.002))));
  }, { passive: false });

  c.addEventListener("mousedown", e => { if (e.button === 1) e.preventDefault(); });
  c.addEventListener("pointerdown", e => {
    if (e.button !== 0 && e.button !== 1) return;
    c.focus();
    const [x, y] = local(e);
    const pan = e.button === 1 || e.shiftKey;
    drag = { kind: pan ? "pan" : "select", x0: x, y0: y, from: store.view.from, to: store.view.to, moved: false, id: e.pointerId };
    c.setPointerCapture(e.pointerId);
    e.preventDefault();
  });

  c.addEventListener("pointermove", e => {
    const [x, y] = local(e);
    if (!drag) { hover(x, y, e); return; }
    tip.hidden = true;
    if (Math.abs(x - drag.x0) > 3 || Math.abs(y - drag.y0) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (drag.kind === "pan") {
      const dt = ((x - drag.x0) / tl.plotWidth) * (drag.to - drag.from);
      panBy(store, drag.from - dt - store.view.from);
    } else {
      const a = tl.tOf(Math.max(LABEL_W, drag.x0)), b = tl.tOf(Math.max(LABEL_W, x));
      tl.dragSel = { from: Math.min(a, b), to: Math.max(a, b) };
      tl.draw();
    }
  });

  const finish = (e: PointerEvent, cancelled: boolean): void => {
    if (!drag || e.pointerId !== drag.id) return;
    const d = drag;
    drag = null;
    if (c.hasPointerCapture(e.pointerId)) c.releasePointerCapture(e.pointerId);
    if (d.kind === "select") {
      const sel = tl.dragSel;
      tl.dragSel = null;
      if (cancelled) { tl.draw(); return; }
      if (d.moved && sel) store.setSelection(sel);
      else if (!d.moved && d.x0 >= LABEL_W) {
        const lane = tl.laneAt(d.y0);
        if (lane) pick(lane, tl.tOf(d.x0));
      } else if (!d.moved) {
        const lane = tl.laneAt(d.y0);
        if (lane && lane.tid !== null) store.filterThread(lane.tid, e.ctrlKey || e.metaKey);
      }
      tl.draw();
    }
  };
  c.addEventListener("pointerup", e => finish(e, false));
  c.addEventListener("pointercancel", e => finish(e, true));
  c.addEventListener("pointerleave", () => { tip.hidden = true; });

  function hover(x: number, y: number, e: MouseEvent): void {
    c.style.cursor = x < LABEL_W ? (tl.laneAt(y)?.tid != null ? "pointer" : "default") : "crosshair";
    const hit = tl.hitAt(x, y);
    if (!hit) { tip.hidden = true; return; }
    tip.textContent = tl.describe(hit);
    tip.hidden = false;
    const wrap = tip.parentElement!.getBoundingClientRect();
    const left = Math.min(e.clientX - wrap.left + 14, wrap.width - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = (e.clientY - wrap.top + tip.parentElement!.scrollTop + 16) + "px";
  }

  c.addEventListener("keydown", e => {
    const v = store.view;
    const span = v.to - v.from;
    const mid = (v.from + v.to) / 2;
    switch (e.key) {
      case "ArrowLeft": panBy(store, -span * 0.2); break;
      case "ArrowRight": panBy(store, span * 0.2); break;
      case "ArrowUp": case "+": case "=": zoomAround(store, mid, 0.5); break;
      case "ArrowDown": case "-": zoomAround(store, mid, 2); break;
      case "0": case "Home": store.setView(store.full); break;
      case "Escape": store.setSelection(null); break;
      default: return;
    }
    e.preventDefault();
  });

  byId("zoom-in").addEventListener("click", () => zoomAround(store, (store.view.from + store.view.to) / 2, 0.5));
  byId("zoom-out").addEventListener("click", () => zoomAround(store, (store.view.from + store.view.to) / 2, 2));
  byId("zoom-reset").addEventListener("click", () => store.setView(store.full));
  byId("zoom-selection").addEventListener("click", () => { if (store.selection) store.setView(store.selection); });
}
