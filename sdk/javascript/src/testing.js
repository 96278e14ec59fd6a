// Run a built component's cases in the real host from a JavaScript test
// runner: `toolhost test FILE.wasm CASES.json --json`, parsed.

import { spawnSync } from 'node:child_process';

/**
 * Run the cases of `casesPath` (see `toolhost test --help`) against the
 * component `wasmPath`. Returns `{ passed, failed, outcomes, report }`:
 * `failed` lists `{name, failures}` of the cases that did not pass, and
 * `report` says the same in words for an assertion message. The
 * `toolhost` binary is `$TOOLHOST`, else `toolhost` on the PATH.
 */
export function runCases(wasmPath, casesPath, { toolhost = process.env.TOOLHOST || 'toolhost' } = {}) {
  const run = spawnSync(toolhost, ['test', wasmPath, casesPath, '--json'], { encoding: 'utf8' });
  if (run.error) {
    throw new Error(`cannot run \`${toolhost}\` (${run.error.message}); put toolhost on the PATH or set TOOLHOST to its path`);
  }
  let outcomes;
  try {
    outcomes = JSON.parse(run.stdout);
  } catch {
    throw new Error(`\`${toolhost} test\` failed (exit ${run.status}):\n${run.stderr}`);
  }
  const failed = outcomes.filter((o) => o.failures.length).map(({ name, failures }) => ({ name, failures }));
  const report = failed.map((f) => `FAILED: ${f.name}\n${f.failures.map((x) => `  - ${x}`).join('\n')}`).join('\n');
  return { passed: outcomes.length - failed.length, failed, outcomes, report };
}
