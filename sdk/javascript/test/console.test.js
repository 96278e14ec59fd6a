// The console a tool gets where the engine has none (QuickJS).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleFor } from '../src/console.js';

test('console lines go to the log at its levels, written as Node writes them', () => {
  const lines = [];
  const console = consoleFor((level, line) => lines.push([level, line]));
  console.log('rows', 3, { a: [1] }, null, undefined);
  console.warn('careful');
  console.error(new TypeError('bad'));
  const circular = {};
  circular.self = circular;
  console.debug(circular);
  console.trace(Symbol('s').description);
  assert.deepEqual(lines.slice(0, 2), [['info', 'rows 3 {"a":[1]} null undefined'], ['warn', 'careful']]);
  assert.equal(lines[2][0], 'error');
  assert.match(lines[2][1], /^TypeError: bad\n/);
  assert.deepEqual(lines.slice(3), [['debug', '[object Object]'], ['trace', 's']]);
});

test('a console line never throws, and the other console methods exist', () => {
  const lines = [];
  const console = consoleFor((level, line) => lines.push([level, line]));
  const bare = Object.create(null);
  bare.self = bare;
  const throwing = { toJSON() { throw new Error('no'); }, toString() { throw new Error('no'); } };
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const badStack = new Error('e');
  Object.defineProperty(badStack, 'stack', { get() { throw new Error('no'); } });
  console.log(bare, throwing, proxy, badStack, 5n, Symbol('s'));
  assert.equal(lines.length, 1);
  assert.match(lines[0][1], /^\[a value that cannot be shown\] \[a value that cannot be shown\] \[a value that cannot be shown\] .* 5n Symbol\(s\)$/);
  console.group('g');
  console.count();
  console.groupEnd();
  console.assert(false, 'broken');
  console.assert(true, 'fine');
  console.time('t');
  console.timeEnd('t');
  console.dir({ a: 1 });
  console.table([1]);
  assert.deepEqual(lines.slice(1, 4), [['info', 'g'], ['info', '  default: 1'], ['error', 'Assertion failed broken']]);
  assert.match(lines[4][1], /^t: \d+\.\d{3} ms$/);
  assert.deepEqual(lines.slice(5), [['info', '{"a":1}'], ['info', '[1]']]);
});

