// The SDK's UTF-8 (QuickJS has no TextDecoder) against Node's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeUtf8, encodeUtf8 } from '../src/utf8.js';

const fatal = new TextDecoder('utf-8', { fatal: true });

/** What the fatal TextDecoder makes of `bytes`, or null if it refuses them. */
function expected(bytes) {
  try {
    return fatal.decode(bytes);
  } catch {
    return null;
  }
}

/** What decodeUtf8 makes of `bytes`, or null if it refuses them. */
function got(bytes) {
  try {
    return decodeUtf8(bytes);
  } catch (err) {
    assert.ok(err instanceof TypeError, String(err));
    return null;
  }
}

test('decodes as a fatal TextDecoder does: text, a leading BOM, every malformed form', () => {
  const cases = [
    [],
    [0x61, 0x62],
    [0xef, 0xbb, 0xbf, 0x61], // a BOM, dropped
    [0x61, 0xef, 0xbb, 0xbf], // a BOM later, kept
    [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x25, 0x32, 0x35], // é € 😀 and `%25`
    [0xc0, 0x80], // overlong
    [0xe0, 0x80, 0x80], // overlong
    [0xed, 0xa0, 0x80], // a surrogate
    [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
    [0xc3], // cut short
    [0x80], // a lone continuation
    [0xff],
  ];
  for (const c of cases) assert.equal(got(new Uint8Array(c)), expected(new Uint8Array(c)), JSON.stringify(c));
  // A plain array, as an engine may hand a list<u8>.
  assert.equal(decodeUtf8([0xc3, 0xa9]), 'é');
  // Random bytes, mostly not UTF-8, and random text, across the chunks.
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < 300; i++) {
    const bytes = Uint8Array.from({ length: next() % 12 }, () => next() % 256);
    assert.equal(got(bytes), expected(bytes), JSON.stringify([...bytes]));
  }
  const long = Array.from({ length: 30000 }, () => String.fromCodePoint([0x61, 0xe9, 0x20ac, 0x1f600, 0x0a][next() % 5])).join('');
  const bytes = new TextEncoder().encode(long);
  assert.equal(decodeUtf8(bytes), long);
});

test('encodes as TextEncoder does, a lone surrogate as U+FFFD', () => {
  for (const text of ['', 'abc', 'é€😀%', 'a\ud800b', '\udc00', 'x\ud83d', '\ud83d\ude00\ude00']) {
    assert.deepEqual([...encodeUtf8(text)], [...new TextEncoder().encode(text)], JSON.stringify(text));
  }
  assert.ok(encodeUtf8('a') instanceof Uint8Array);
});
