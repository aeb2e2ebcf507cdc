// Small charts on canvas: sizing for the screen's pixel ratio, a framed plot box, time labels, a line.

import { ticks } from "./axis";
import { formatTick } from "./format";
import type { Range } from "./types";

export const CHART_H = 110;
export const PAD_L = 70;

/** Sizes a canvas to its CSS width and `cssH` at the screen's pixel ratio; drawing is in CSS px. */
export function setupCanvas(c: HTMLCanvasElement, cssH: number): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth || 600;
  c.width = Math.round(w * dpr);
  c.height = Math.round(cssH * dpr);
  c.style.height = cssH + "px";
  const ctx = c.getContext("2d");
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** A chart's box with its y labels (the top value and 0); leaves the label style set. */
export function frame(ctx: CanvasRenderingContext2D, top: string, pw: number, ph: number): void {
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = "#3b4252";
  ctx.textBaseline = "middle";
  ctx.fillText(top, 4, 8);
  ctx.fillText("0", 4, 4 + ph);
  ctx.strokeStyle = "#c9ced8";
  ctx.strokeRect(PAD_L + 0.5, 4.5, pw, ph);
}

/** Time labels under a chart's box of `pw` × `ph` px that spans `r`. */
export function timeLabels(ctx: CanvasRenderingContext2D, r: Range, pw: number, ph: number): void {
  const { step, times } = ticks(r, pw, 120);
  ctx.textBaseline = "top";
  for (const t of times) {
    const x = PAD_L + ((t - r.from) / (r.to - r.from)) * pw;
    ctx.fillText(formatTick(t, step), x + 2, ph + 8);
  }
}

/** A line through `values` (null: a gap in the data, skipped) scaled so that `top` is the box's top. */
export function polyline(ctx: CanvasRenderingContext2D, values: (number | null)[], top: number, pw: number, ph: number, color: string): void {
  const n = values.length;
  if (!n) return;
  ctx.strokeStyle = color;
  ctx.beginPath();
  let started = false;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null || v === undefined) continue;
    const x = PAD_L + ((i + 0.5) / n) * pw;
    const y = 4 + ph - (v / top) * ph;
    if (!started) { ctx.moveTo(x, y); started = true; } else ctx.lineTo(x, y);
  }
  ctx.lineWidth = 1.5;
  ctx.stroke();
  ctx.lineWidth = 1;
}
