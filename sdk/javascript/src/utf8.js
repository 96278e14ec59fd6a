// UTF-8 both ways without TextDecoder or TextEncoder, which QuickJS (the
// engine a built tool runs on) does not have. The engine's own URI
// functions do the work: `decodeURIComponent` refuses any byte sequence
// that is not UTF-8 (overlong forms and surrogates included), as a fatal
// TextDecoder does, and `encodeURIComponent` writes UTF-8.

/** Bytes are turned into `%XX` text this many at a time (an engine's
 * limit on the arguments of one call is far above it). */
const CHUNK = 8192;

/** `bytes` (a Uint8Array) as text; a leading byte order mark is dropped,
 * as TextDecoder drops it. Throws a TypeError if they are not UTF-8. */
export function decodeUtf8(given) {
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
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** `text` as UTF-8 bytes (a Uint8Array); a lone surrogate becomes U+FFFD,
 * as TextEncoder makes it. */
export function encodeUtf8(text) {
  const whole = String(text).replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  const bytes = unescape(encodeURIComponent(whole));
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = bytes.charCodeAt(i);
  return out;
}
