// What a built tool's engine lacks, and what each call makes its own. It
// runs before the tool's module and its dependencies (`toolhost-js build`
// puts it first in the bundle), so what they take from the globals when
// they load is what this module put there.
//
// QuickJS has no console, TextDecoder or TextEncoder: a console that
// writes to the host's log, and the two for UTF-8. And every call of a
// built tool starts from the same snapshot of QuickJS, taken when the
// module ran at build time: what the engine seeded or started then would
// be the same in every call (Math.random's sequence, performance.now's
// origin). Math.random and performance are replaced once, here, by ones
// whose state `freshCall` renews at the start of each call.

import { log as hostLog } from 'toolhost:plugin/log@0.1.0';
import { consoleFor } from './console.js';
import { Utf8Decoder, Utf8Encoder, wellFormed } from './utf8.js';

if (typeof globalThis.console === 'undefined') {
  globalThis.console = consoleFor((level, line) => hostLog(level, wellFormed(line)));
}
if (typeof globalThis.TextDecoder === 'undefined') globalThis.TextDecoder = Utf8Decoder;
if (typeof globalThis.TextEncoder === 'undefined') globalThis.TextEncoder = Utf8Encoder;

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

/** The engine's performance object, as the snapshot holds it. */
const engine = typeof performance === 'object' && performance !== null ? performance : null;
const engineNow = typeof engine?.now === 'function' ? engine.now.bind(engine) : null;

/** This call's: where its clock starts, when it started, what it draws. */
let started = engineNow ? engineNow() : 0;
let origin = Date.now();
let draw = seededRandom(`snapshot|${origin}|${started}`);

/** Whether `performance.now` cannot be replaced: so in QuickJS, whose
 * clock the snapshot started; Node's counts from its own process's start. */
const readOnlyNow = engine !== null && Object.getOwnPropertyDescriptor(engine, 'now')?.writable === false;

// One Math.random for the tool's life, whose state each call renews: code
// that kept a reference to it when it loaded (lodash does) draws this
// call's numbers too. Where `performance.now` is QuickJS's (read-only,
// not configurable), `performance` is replaced by an object over the
// engine's whose clock each call restarts.
try {
  Math.random = () => draw();
} catch {}
if (engineNow && readOnlyNow) {
  try {
    globalThis.performance = Object.create(engine, {
      now: { value: () => engineNow() - started, writable: true, enumerable: true, configurable: true },
      timeOrigin: { get: () => origin, enumerable: true, configurable: true },
    });
  } catch {}
}

/** Start a call: Math.random seeded afresh (from `callId`, the time and
 * the monotonic clock, or from `seed` if given: tests), performance.now
 * counted from now. */
export function freshCall(callId, seed = undefined) {
  started = engineNow ? engineNow() : 0;
  origin = Date.now();
  draw = seededRandom(seed ?? `${callId}|${origin}|${started}`);
}
