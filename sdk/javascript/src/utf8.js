// UTF-8 both ways without TextDecoder or TextEncoder, which QuickJS (the
// engine a built tool runs on) does not have; and the two, for UTF-8, for
// a tool's own code and its dependencies. The engine's own URI
// functions do the work: `decodeURIComponent` refuses any byte sequence
// that is not UTF-8 (overlong forms and surrogates included), as a fatal
// TextDecoder does, and `encodeURIComponent` writes UTF-8.

/** Bytes are turned into `%XX` text this many at a time (an engine's
 * limit on the arguments of one call is far above it). */
const CHUNK = 8192;

/** `bytes` (a Uint8Array) as text; a leading byte order mark is dropped,
 * as TextDecoder drops it, unless `keepBOM`. Throws a TypeError if they
 * are not UTF-8. */
export function decodeUtf8(given, { keepBOM = false } = {}) {
  const bytes = given instanceof Uint8Array ? given : Uint8Array.from(given);
  const parts = [];
  for (let at = 0; at < bytes.length; at += CHUNK) {
    parts.push(String.fromCharCode.apply(null, bytes.subarray(at, at + CHUNK)));
  }
  const latin1 = parts.join('');
  // ASCII is itself; the engine's regex finds out faster than a loop.
  if (!/[^\x00-\x7f]/.test(latin1)) return latin1;
  let text;
  try {
    // `escape` writes each byte above 0x7f as `%XX`; the text is decoded
    // whole, so a character split between two chunks is no matter.
    text = decodeURIComponent(escape(latin1));
  } catch {
    throw new TypeError('the bytes are not UTF-8');
  }
  return !keepBOM && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** A lone UTF-16 surrogate: half of a character (text cut inside one). */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const NATIVE = typeof String.prototype.toWellFormed === 'function';

/** `text` with each lone surrogate made U+FFFD, as TextEncoder makes it:
 * text that can cross to the host (a lone surrogate is not Unicode). The
 * engine's own `toWellFormed` where it has one (QuickJS, Node 20). */
export function wellFormed(text) {
  const string = String(text);
  return NATIVE ? string.toWellFormed() : string.replace(new RegExp(LONE, 'g'), '\ufffd');
}

/** Whether `text` holds no lone surrogate. */
export function isWellFormed(text) {
  return NATIVE ? String(text).isWellFormed() : !LONE.test(text);
}

/** `text` as UTF-8 bytes (a Uint8Array); a lone surrogate becomes U+FFFD,
 * as TextEncoder makes it. */
export function encodeUtf8(text) {
  const bytes = unescape(encodeURIComponent(wellFormed(text)));
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = bytes.charCodeAt(i);
  return out;
}

/** `bytes` as text, each maximal ill-formed subsequence replaced by U+FFFD
 * (the WHATWG decoder's rule, which TextDecoder follows). */
function decodeLossy(bytes) {
  const units = [];
  const parts = [];
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    let need = 0;
    let cp = 0;
    let lower = 0x80;
    let upper = 0xbf;
    if (b < 0x80) cp = b;
    else if (b >= 0xc2 && b <= 0xdf) [need, cp] = [1, b & 0x1f];
    else if (b >= 0xe0 && b <= 0xef) {
      [need, cp] = [2, b & 0x0f];
      if (b === 0xe0) lower = 0xa0;
      if (b === 0xed) upper = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      [need, cp] = [3, b & 0x07];
      if (b === 0xf0) lower = 0x90;
      if (b === 0xf4) upper = 0x8f;
    } else cp = 0xfffd;
    i += 1;
    for (let seen = 0; seen < need; seen++) {
      const c = bytes[i];
      if (c === undefined || c < lower || c > upper) {
        cp = 0xfffd;
        break;
      }
      [lower, upper] = [0x80, 0xbf];
      cp = (cp << 6) | (c & 0x3f);
      i += 1;
    }
    if (cp > 0xffff) units.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
    else units.push(cp);
    if (units.length >= CHUNK) parts.push(String.fromCharCode.apply(null, units.splice(0)));
  }
  parts.push(String.fromCharCode.apply(null, units));
  return parts.join('');
}

/** TextDecoder for UTF-8 alone, for an engine without one (QuickJS). */
export class Utf8Decoder {
  constructor(label = 'utf-8', { fatal = false, ignoreBOM = false } = {}) {
    const labels = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];
    if (!labels.includes(String(label).trim().toLowerCase())) {
      throw new RangeError(`TextDecoder here decodes UTF-8 only, not \`${label}\``);
    }
    this.encoding = 'utf-8';
    this.fatal = Boolean(fatal);
    this.ignoreBOM = Boolean(ignoreBOM);
  }

  decode(input = new Uint8Array(0), options = {}) {
    if (options?.stream) throw new TypeError('TextDecoder here does not decode streams: decode the whole input at once');
    let bytes;
    if (ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    else if (input instanceof ArrayBuffer) bytes = new Uint8Array(input);
    else throw new TypeError('TextDecoder.decode takes an ArrayBuffer or a view of one (e.g. a Uint8Array)');
    let text;
    try {
      text = decodeUtf8(bytes, { keepBOM: true });
    } catch (err) {
      if (this.fatal) throw err;
      text = decodeLossy(bytes);
    }
    return !this.ignoreBOM && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
}

/** TextEncoder, for an engine without one (QuickJS). */
export class Utf8Encoder {
  get encoding() {
    return 'utf-8';
  }

  encode(text = '') {
    return encodeUtf8(text);
  }

  /** `text` written into `into` (a Uint8Array) as far as whole characters
   * fit: how many UTF-16 units were read and bytes written. */
  encodeInto(text, into) {
    const string = wellFormed(text);
    let read = 0;
    let written = 0;
    for (const char of string) {
      const bytes = encodeUtf8(char);
      if (written + bytes.length > into.length) break;
      into.set(bytes, written);
      written += bytes.length;
      read += char.length;
    }
    return { read, written };
  }
}
