// The built component, run case by case in the real host (`toolhost test`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCases } from '@toolhost/sdk/testing';

test('{name}.wasm passes tests/cases.json in the real host', () => {
  const { failed, report } = runCases('{name}.wasm', 'tests/cases.json');
  assert.deepEqual(failed, [], report);
});
