// The schema builder and the argument check, natively (no host needed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { check, s } from '../src/schema.js';

const input = s.object({
  path: s.string('The file.'),
  limit: s.integer({ description: 'At most this many.', default: 10, minimum: 1 }),
  mode: s.optional(s.enum(['fast', 'exact'])),
  tags: s.optional(s.array(s.string())),
});

test('the builder writes plain JSON Schema; required is what has no default and is not optional', () => {
  assert.deepEqual(JSON.parse(JSON.stringify(input)), {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The file.' },
      limit: { type: 'integer', description: 'At most this many.', default: 10, minimum: 1 },
      mode: { type: 'string', enum: ['fast', 'exact'] },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['path'],
    additionalProperties: false,
  });
});

test('check fills in defaults and leaves optional members out', () => {
  assert.deepEqual(check(input, { path: 'a.txt' }), { path: 'a.txt', limit: 10 });
  assert.deepEqual(check(input, { path: 'a', limit: 3, mode: 'fast', tags: ['x'] }), { path: 'a', limit: 3, mode: 'fast', tags: ['x'] });
});

test('check names where and what is wrong', () => {
  const refused = (value, message) => assert.throws(() => check(input, value), { message });
  refused({}, '`path` is missing: The file.');
  refused({ path: 3 }, '`path` must be string, not integer');
  refused({ path: 'a', limit: 0 }, '`limit` must be at least 1');
  refused({ path: 'a', limit: 1.5 }, '`limit` must be integer, not number');
  refused({ path: 'a', mode: 'slow' }, '`mode` must be one of "fast", "exact"');
  refused({ path: 'a', tags: ['x', 2] }, '`tags[1]` must be string, not integer');
  refused({ path: 'a', pth: 'b' }, '`pth` is not an argument of this tool; it takes `path`, `limit`, `mode`, `tags`');
  refused([], 'the arguments must be object, not array');
});

test('a hand-written schema works the same', () => {
  const schema = { type: 'object', properties: { n: { type: 'number', maximum: 2 } }, required: ['n'] };
  assert.deepEqual(check(schema, { n: 1, extra: true }), { n: 1, extra: true });
  assert.throws(() => check(schema, { n: 3 }), { message: '`n` must be at most 2' });
});
