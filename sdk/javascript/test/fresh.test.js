// What each call makes its own: Math.random and performance.now's origin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshCall, seededRandom } from '../src/fresh.js';

test('each seed draws its own sequence, evenly, in [0, 1)', () => {
  const first = (seed) => seededRandom(seed)();
  assert.equal(first('1-1|5'), first('1-1|5'));
  const firsts = new Set(Array.from({ length: 1000 }, (_, i) => first(`7-${i}|1796083934637|12.5`)));
  assert.equal(firsts.size, 1000);
  const random = seededRandom('x');
  const buckets = new Array(10).fill(0);
  for (let i = 0; i < 100000; i++) {
    const r = random();
    assert.ok(r >= 0 && r < 1, String(r));
    buckets[Math.floor(r * 10)] += 1;
  }
  for (const b of buckets) assert.ok(Math.abs(b - 10000) < 500, String(buckets));
});

test('a call gets a Math.random of its own and performance.now from its start', () => {
  freshCall('1-1');
  const a = Math.random();
  freshCall('1-1');
  const b = Math.random();
  assert.notEqual(a, b, 'the same call id later draws another sequence');
  assert.ok(performance.now() >= 0 && performance.now() < 1000);
});
