// Tiny DOM helpers: element creation, lookup by id, clearing.

type Attrs = Record<string, string | number | boolean | null | undefined>;
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = String(v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error("missing element #" + id);
  return el as T;
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** Shows a sentence as a visible error inside `el` (replacing its content). */
export function showError(el: Element, sentence: string): void {
  clear(el);
  el.append(h("div", { class: "error", role: "alert", text: sentence }));
}

export function fillSelect(sel: HTMLSelectElement, options: [string, string][], value: string): void {
  clear(sel);
  for (const [v, label] of options) sel.append(h("option", { value: v, text: label }));
  sel.value = options.some(o => o[0] === value) ? value : (options[0]?.[0] ?? "");
}
