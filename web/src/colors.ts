// Stable colours: a hash of the function name picks the hue, so a function keeps its colour everywhere.

const cache = new Map<string, string>();

/** FNV-1a 32-bit hash of a string. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (as in MurmurHash3) so that names differing in one letter get distant hues.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The colour of a function (CSS hsl string), memoised: from its name, and from its module too
 * when the name alone says nothing ("[unknown]", a bare address), so that those differ by module.
 */
export function colorOf(name: string, module = ""): string {
  if (module && (name.startsWith("[") || name.startsWith("0x"))) name = module + " " + name;
  let c = cache.get(name);
  if (c === undefined) {
    const x = hash32(name);
    const hue = x % 360;
    const sat = 55 + ((x >>> 9) % 25);
    const light = 48 + ((x >>> 17) % 14);
    c = `hsl(${hue} ${sat}% ${light}%)`;
    if (cache.size > 50000) cache.clear();
    cache.set(name, c);
  }
  return c;
}
