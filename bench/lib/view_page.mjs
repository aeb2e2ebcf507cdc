// Page timings for bench/view_scale.sh: node view_page.mjs WEB_DIR CHROMIUM URL prints
// {"first_view_ms": ..., "zoom_ms": ...} measured in headless Chromium.
import { createRequire } from "node:module";
import { join } from "node:path";

const [web, chromiumPath, url] = process.argv.slice(2);
const { chromium } = createRequire(join(web, "package.json"))("playwright-core");
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const ready = page => page.waitForFunction(() => document.body.dataset.state === "ready", undefined, { timeout: 600000, polling: 10 });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  let t0 = performance.now();
  await page.goto(url);
  await page.waitForTimeout(50);
  await ready(page);
  const first = performance.now() - t0;
  const box = await page.locator("#timeline").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  // From the wheel event to the redrawn page: the page's own debounce, the new timeline
  // answer and drawing.
  const answered = page.waitForResponse(r => r.url().includes("api/timeline"), { timeout: 600000 });
  t0 = performance.now();
  await page.mouse.wheel(0, -600);
  await answered;
  await ready(page);
  const zoom = performance.now() - t0;
  console.log(JSON.stringify({ first_view_ms: first, zoom_ms: zoom }));
} finally {
  await browser.close();
}
