// Every call of a built tool starts from the same snapshot of QuickJS,
// taken when the module ran at build time. What the engine seeded or
// started then would be the same in every call: Math.random's sequence
// and performance.now's origin. Each call makes them its own.

/** A 32-bit hash of `text` (FNV-1a), mixed with `salt`. */
function hash(text, salt) {
  let h = (0x811c9dc5 ^ salt) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Math.random's replacement: sfc32, seeded from `seed` (text that differs
 * between calls). Not for secrets, as Math.random never is. */
export function seededRandom(seed) {
  let [a, b, c, d] = [1, 2, 3, 4].map((salt) => hash(seed, salt));
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 15; i++) next();
  // 53 random bits, as engines give them.
  return () => ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
}

const engineNow = typeof performance === 'object' && typeof performance.now === 'function' ? performance.now.bind(performance) : null;

/** Make this call's own Math.random (seeded from `callId`, the time and
 * the monotonic clock) and performance.now (counted from now). */
export function freshCall(callId) {
  const started = engineNow ? engineNow() : 0;
  Math.random = seededRandom(`${callId}|${Date.now()}|${started}`);
  if (engineNow) performance.now = () => engineNow() - started;
}
