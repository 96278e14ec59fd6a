// What the host answers in native tests: an in-memory workspace (`files`),
// a broker that records requests, and a log that keeps its lines.
export const workspace = new Map();
export const logged = [];
export const ran = [];

export function read(path, maxBytes) {
  if (!Number.isSafeInteger(maxBytes)) throw new TypeError('max-bytes is a u64: a number (QuickJS gives u64 as numbers)');
  if (!workspace.has(path)) throw { tag: 'not-found', val: `\`${path}\`: no such file` };
  return new TextEncoder().encode(workspace.get(path));
}

export function writeAtomic(path, data) {
  if (path.startsWith('/')) throw { payload: { tag: 'denied', val: `no grant for \`${path}\`` } };
  workspace.set(path, new TextDecoder().decode(data));
}

export function walk(path) {
  return [...workspace.keys()].map((p) => ({ path: p, kind: 'file', size: 3, modifiedNs: 5 }));
}

export function run(request) {
  ran.push(request);
  if (request.program.tag === 'shell') throw { tag: 'dry-run', val: 'would run it' };
  return { exitCode: 0, stdout: request.program.val.join(' '), stderr: '', timedOut: false, truncated: false, durationMs: 7, confinement: [] };
}

export function log(level, message) {
  logged.push([level, message]);
}

export function call(name, input) {
  if (name !== 'greet') throw { tag: 'not-found', val: `no service \`${name}\`` };
  return JSON.stringify({ greeting: `hello, ${JSON.parse(input).name}` });
}

export function offered() {
  return [{ name: 'greet', description: 'Greet.', inputSchema: '{}' }];
}
