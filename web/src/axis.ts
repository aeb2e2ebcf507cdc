// Time-axis tick placement (1-2-5 steps) and drawing on a canvas strip.

import { formatTick } from "./format";
import type { Range } from "./types";

/** The smallest step of the form {1,2,5}×10^k that is at least `raw`. */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** Tick times within `r` for a plot `px` pixels wide, about one tick per `spacing` pixels. */
export function ticks(r: Range, px: number, spacing = 110): { step: number; times: number[] } {
  const span = r.to - r.from;
  const step = Math.max(1, niceStep(span / Math.max(1, px / spacing)));
  const times: number[] = [];
  for (let t = Math.ceil(r.from / step) * step; t <= r.to && times.length < 200; t += step) times.push(t);
  return { step, times };
}

/** Draws ticks and labels along the bottom of a strip canvas; x0/width is the plot area in CSS px. */
export function drawAxis(ctx: CanvasRenderingContext2D, r: Range, x0: number, width: number, height: number): void {
  const { step, times } = ticks(r, width);
  ctx.save();
  ctx.strokeStyle = "#8a94a6";
  ctx.fillStyle = "#3b4252";
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "top";
  ctx.beginPath();
  ctx.moveTo(x0, height - 0.5);
  ctx.lineTo(x0 + width, height - 0.5);
  for (const t of times) {
    const x = Math.round(x0 + ((t - r.from) / (r.to - r.from)) * width) + 0.5;
    ctx.moveTo(x, height - 6);
    ctx.lineTo(x, height);
    const label = formatTick(t, step);
    const w = ctx.measureText(label).width;
    if (x + 3 + w <= x0 + width + 2) ctx.fillText(label, x + 3, 3);
  }
  ctx.stroke();
  ctx.restore();
}
