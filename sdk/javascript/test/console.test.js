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
