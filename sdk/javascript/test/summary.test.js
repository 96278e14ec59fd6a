// The build's one-line summary of a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstError } from '../src/summary.js';

test('a failed build is said in the line that names what was thrown', () => {
  const wizer = [
    'Failed to initialize component (wizer (/p/node_modules/@bytecodealliance/wizer-linux-x64/wizer)):',
    'Exception while evaluating top-level script',
    'tool.js:1696:1 ReferenceError: undefinedThing is not defined',
    'Additionally, some promises were rejected, but the rejection never handled:',
  ].join('\n');
  assert.equal(firstError(wizer), 'ReferenceError: undefinedThing is not defined');
  assert.equal(firstError('\n  no such world `tool-plugin`\nmore'), 'no such world `tool-plugin`');
  const qjs = [
    ': Failed to evaluate user JavaScript module: Failed to finish JavaScript module evaluation: Error: undefinedThing is not defined',
    '    at <anonymous> (/bundled.js:6:1)',
  ].join('\n');
  assert.equal(firstError(qjs), 'Error: undefinedThing is not defined');
  assert.equal(firstError(''), 'the build failed');
});
