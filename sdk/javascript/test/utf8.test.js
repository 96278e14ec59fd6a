// The SDK's UTF-8 (QuickJS has no TextDecoder) against Node's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Utf8Decoder, Utf8Encoder, decodeUtf8, encodeUtf8 } from '../src/utf8.js';

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

test('the TextDecoder for QuickJS decodes as Node\'s does: fatal or not, a BOM ignored or not', () => {
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const samples = [[0xef, 0xbb, 0xbf, 0x61], [0xe0, 0x80], [0xf0, 0x90, 0x41], [0xed, 0xa0, 0x80, 0x62], [0xf4, 0x90], [0xc3]];
  for (let i = 0; i < 2000; i++) {
    const pool = [0x41, 0x80, 0xbf, 0xc2, 0xc3, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x90, 0x8f, 0x9f, 0xbb];
    samples.push(Array.from({ length: next() % 9 }, () => (next() % 3 ? pool[next() % pool.length] : next() % 256)));
  }
  for (const options of [{}, { fatal: true }, { ignoreBOM: true }]) {
    const node = new TextDecoder('utf-8', options);
    const ours = new Utf8Decoder('utf-8', options);
    for (const sample of samples) {
      const bytes = new Uint8Array(sample);
      let want;
      let have;
      try {
        want = node.decode(bytes);
      } catch {
        want = 'refused';
      }
      try {
        have = ours.decode(bytes);
      } catch (err) {
        assert.ok(err instanceof TypeError);
        have = 'refused';
      }
      assert.equal(have, want, `${JSON.stringify(options)} ${JSON.stringify(sample)}`);
    }
  }
  // A view into a larger buffer, an ArrayBuffer, nothing at all.
  const buffer = new Uint8Array([0x78, 0xc3, 0xa9, 0x79]);
  assert.equal(new Utf8Decoder().decode(buffer.subarray(1, 3)), 'é');
  assert.equal(new Utf8Decoder().decode(buffer.buffer), 'xéy');
  assert.equal(new Utf8Decoder().decode(), '');
  assert.throws(() => new Utf8Decoder('latin1'), RangeError);
  assert.throws(() => new Utf8Decoder().decode(buffer, { stream: true }), /decode the whole input at once/);
  assert.deepEqual([...new Utf8Encoder().encode('é\ud800')], [...new TextEncoder().encode('é\ud800')]);
  assert.equal(new Utf8Encoder().encoding, 'utf-8');
  for (const text of ['', 'abc', 'é€😀x', 'a\ud800b']) {
    for (const size of [0, 1, 2, 3, 4, 5, 8, 20]) {
      const [ours, node] = [new Uint8Array(size), new Uint8Array(size)];
      assert.deepEqual(new Utf8Encoder().encodeInto(text, ours), new TextEncoder().encodeInto(text, node), `${JSON.stringify(text)} into ${size}`);
      assert.deepEqual(ours, node);
    }
  }
  for (const label of ['unicode11utf8', 'UTF8 ']) assert.equal(new Utf8Decoder(label).encoding, 'utf-8');
  for (const odd of ['text', 5, null, [0x61]]) assert.throws(() => new Utf8Decoder().decode(odd), TypeError);
  assert.equal(new Utf8Decoder().decode(new DataView(buffer.buffer, 1, 2), null), 'é');
});

test('without the engine\'s toWellFormed (Node 18), lone surrogates are found and replaced the same', async () => {
  const texts = ['', 'abc', 'é😀', 'a\ud800b', '\udc00', 'x\ud83d', '\ud83d\ude00\ude00', '\ud800\ud800\udc00'];
  const saved = Object.getOwnPropertyDescriptors(String.prototype);
  const [toWellFormed, isWellFormed] = [String.prototype.toWellFormed, String.prototype.isWellFormed];
  try {
    delete String.prototype.toWellFormed;
    delete String.prototype.isWellFormed;
    const fallback = await import('../src/utf8.js?no-native');
    for (const text of texts) {
      assert.equal(fallback.wellFormed(text), toWellFormed.call(text), JSON.stringify(text));
      assert.equal(fallback.isWellFormed(text), isWellFormed.call(text), JSON.stringify(text));
    }
  } finally {
    Object.defineProperty(String.prototype, 'toWellFormed', saved.toWellFormed);
    Object.defineProperty(String.prototype, 'isWellFormed', saved.isWellFormed);
  }
});
