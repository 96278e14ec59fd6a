// What a built tool's engine lacks, and what each call makes its own:
// Math.random and performance.now's origin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshCall, seededRandom } from '../src/setup.js';

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

test('a call draws numbers of its own, through references kept before it too', () => {
  const kept = Math.random;
  freshCall('1-1');
  const a = [Math.random(), kept()];
  freshCall('1-1');
  const b = [Math.random(), kept()];
  assert.notDeepEqual(a, b, 'the same call id later draws another sequence');
  // A call starts its sequence afresh, whatever the one before drew.
  freshCall('1-2', 'a fixed seed');
  const first = [Math.random(), kept()];
  Math.random();
  freshCall('1-3', 'a fixed seed');
  assert.deepEqual([Math.random(), kept()], first);
  // Node's own performance, writable and counted from this process's
  // start, is left as it is.
  assert.equal(Object.getPrototypeOf(performance), Performance.prototype);
});

test('performance is replaced whole where its `now` is read-only, as in QuickJS', async () => {
  const saved = globalThis.performance;
  let clock = 5000;
  const frozen = {};
  Object.defineProperty(frozen, 'now', { value: () => clock, writable: false, enumerable: true, configurable: false });
  try {
    globalThis.performance = frozen;
    assert.throws(() => {
      performance.now = () => 0;
    }, TypeError);
    // A copy of the module that finds this object as the engine's.
    const { freshCall: fresh } = await import('../src/setup.js?read-only');
    const now = performance.now;
    assert.doesNotThrow(() => fresh('2-1'));
    assert.equal(performance.now(), 0);
    clock += 12.5;
    assert.equal(performance.now(), 12.5);
    assert.equal(now(), 12.5, 'a reference kept before the call counts from its start too');
    assert.ok(Math.abs(performance.timeOrigin - Date.now()) < 1000);
  } finally {
    globalThis.performance = saved;
  }
});
