// Fetches the API relative to the page URL and tracks work in flight for body[data-state].

export class ApiError extends Error {
  constructor(message: string, readonly status: number) { super(message); }
}

type Param = string | number | boolean | null | undefined;

let busyCount = 0;

function publishState(): void {
  document.body.dataset.state = busyCount > 0 ? "loading" : "ready";
}

/** Marks some work as under way; call the returned function once when it is done. */
export function hold(): () => void {
  busyCount++;
  publishState();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    // Released after the current task so that the caller's drawing (in the same
    // promise continuation chain) has happened before the page says "ready".
    setTimeout(() => { busyCount--; publishState(); }, 0);
  };
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}

export function apiUrl(path: string, params: Record<string, Param> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === "") continue;
    q.set(k, typeof v === "number" ? String(Math.round(v)) : String(v));
  }
  const qs = q.toString();
  return "api/" + path + (qs ? "?" + qs : "");
}

/** GET api/PATH?params as JSON; throws ApiError with the server's sentence on failure. */
export async function getJson<T>(path: string, params: Record<string, Param> = {}, signal?: AbortSignal): Promise<T> {
  const release = hold();
  try {
    let res: Response;
    try {
      res = await fetch(apiUrl(path, params), { signal, headers: { Accept: "application/json" } });
    } catch (e) {
      if (isAbort(e)) throw e;
      throw new ApiError("Cannot reach the kairos view server (" + String(e) + "); is `kairos view` still running?", 0);
    }
    const text = await res.text();
    let body: unknown = null;
    try { body = text ? JSON.parse(text) : null; } catch { body = null; }
    if (!res.ok) {
      const sentence = body && typeof body === "object" && typeof (body as { error?: unknown }).error === "string"
        ? (body as { error: string }).error
        : `The server answered ${res.status} ${res.statusText} to ${path}` + (text ? ": " + text.slice(0, 200) : ".");
      throw new ApiError(sentence, res.status);
    }
    if (body === null) throw new ApiError(`The server's answer to ${path} is not JSON.`, res.status);
    return body as T;
  } finally {
    release();
  }
}

/** One request stream where a newer request aborts the older one (stale answers are dropped). */
export class Latest {
  private ctrl: AbortController | null = null;

  async get<T>(path: string, params: Record<string, Param>): Promise<T | null> {
    this.ctrl?.abort();
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    try {
      const v = await getJson<T>(path, params, ctrl.signal);
      return ctrl.signal.aborted ? null : v;
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return null;
      throw e;
    }
  }

  cancel(): void { this.ctrl?.abort(); this.ctrl = null; }
}

export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Wraps `fn` so that calls within `ms` of each other run it once; the page is "loading" meanwhile. */
export function debounced(fn: () => Promise<void>, ms: number): () => void {
  let timer: number | undefined;
  let release: (() => void) | null = null;
  return () => {
    if (timer !== undefined) clearTimeout(timer);
    if (!release) release = hold();
    timer = window.setTimeout(() => {
      timer = undefined;
      const r = release;
      release = null;
      void fn().finally(() => r?.());
    }, ms);
  };
}
