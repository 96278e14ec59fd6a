// defineTool, Context and the error mapping, natively: the host imports
// are fakes (fake-imports.mjs, loaded through fake-host.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Context, Denied, DryRun, Failed, InvalidInput, Retry, ToolError, defineTool, s } from '../src/index.js';
import { logged, workspace } from './fake-imports.mjs';

const wit = { callId: 'c1', workspaceRoot: '/home/me/proj', dryRun: false, settings: '{"k":1}' };

function tool(run, extra = {}) {
  return defineTool({
    name: 'probe',
    description: 'A probe for the SDK tests.',
    input: s.object({ x: s.optional(s.string()), n: s.integer({ default: 1 }) }),
    capabilities: ['workspace:write', 'dir:notes:write'],
    run,
    ...extra,
  });
}

/** What `call` answers: `['ok', output]` or `['err', variant]`. */
function call(t, args = '{}', ctx = wit) {
  try {
    return ['ok', t.call(args, ctx)];
  } catch (err) {
    return ['err', err];
  }
}

test('declaration mistakes are named when the module loads', () => {
  assert.throws(() => defineTool({ name: 'a', description: 'b', input: s.object({}) }), /`run` is missing/);
  assert.throws(() => defineTool({ name: 'a', description: 'b', input: s.string(), run() {} }), /`input` must be an object schema/);
  assert.throws(() => defineTool({ name: 'a', description: 'b', input: s.object({}), output: s.array(s.string()), run() {} }), /`output` must be an object schema/);
  assert.throws(() => tool(() => '', { capabilities: ['workspace'] }), /capability `workspace`: use workspace:read/);
});

test('describe gives the WIT tool-info, capabilities in WIT words', () => {
  const info = tool(() => '', { capabilities: ['workspace:read', 'network:a.example', 'network:b.example', 'dir:notes:read'] }).describe();
  assert.equal(info.name, 'probe');
  assert.equal(JSON.parse(info.inputSchema).properties.n.default, 1);
  assert.deepEqual(info.capabilities, [
    { tag: 'workspace-read' },
    { tag: 'directory', val: { name: 'notes', writable: false } },
    { tag: 'network', val: ['a.example', 'b.example'] },
  ]);
});

test('every thrown value is a result, never a crash', () => {
  const cases = [
    [() => { throw new Error('it broke'); }, { tag: 'failed', val: { message: 'it broke', hint: undefined } }],
    [() => { throw null; }, { tag: 'failed', val: { message: 'null', hint: undefined } }],
    [() => { throw Object.create(null); }, { tag: 'failed', val: { message: 'the tool threw a value that cannot be shown', hint: undefined } }],
    [() => { throw new Failed('no', 42); }, { tag: 'failed', val: { message: 'no', hint: '42' } }],
    [() => { throw new ToolError('invalid_input', 'bad'); }, { tag: 'invalid-input', val: 'bad' }],
    [() => { throw new ToolError('nonsense', 'odd'); }, { tag: 'failed', val: { message: 'odd', hint: undefined } }],
    [() => { throw new Retry('again'); }, { tag: 'retry', val: 'again' }],
    [() => { throw new Denied('no'); }, { tag: 'denied', val: 'no' }],
    [() => { throw new InvalidInput({ toString: () => 'as text' }); }, { tag: 'invalid-input', val: 'as text' }],
    [() => undefined, { tag: 'failed', val: { message: 'the tool returned nothing', hint: 'a tool returns a string, or { content, structured } with a string content' } }],
    [() => Promise.resolve('x'), { tag: 'failed', val: { message: '`run` returned a Promise', hint: 'the host calls a tool synchronously: make `run` a plain (not async) function' } }],
    [() => ({ content: 'x', changedPaths: 'a.txt' }), { tag: 'failed', val: { message: '`changedPaths` must be an array of workspace-relative paths (strings)', hint: undefined } }],
  ];
  for (const [run, want] of cases) assert.deepEqual(call(tool(run)), ['err', want], run.toString());
  const circular = {};
  circular.self = circular;
  const [kind, got] = call(tool(() => ({ content: 'x', structured: circular })));
  assert.equal(kind, 'err');
  assert.match(got.val.message, /^the structured result is not JSON/);
});

test('results: text, structured (BigInts as numbers), changed paths', () => {
  assert.deepEqual(call(tool(() => 'hi')), ['ok', { content: 'hi', structured: undefined, changedPaths: [] }]);
  const [, out] = call(tool((_, ctx) => {
    ctx.writeText('a/../b.txt', 'B');
    return { content: 'wrote', structured: { size: 3n }, changedPaths: ['c.txt'] };
  }));
  assert.deepEqual(out, { content: 'wrote', structured: '{"size":3}', changedPaths: ['b.txt', 'c.txt'] });
  assert.equal(workspace.get('b.txt'), 'B');
});

test('arguments are checked, defaults filled in, a member named __proto__ stays a member', () => {
  assert.deepEqual(call(tool((args) => JSON.stringify(args)), '{"x":"a"}')[1].content, '{"x":"a","n":1}');
  assert.deepEqual(call(tool(() => 'x'), '{"n":"2"}'), ['err', { tag: 'invalid-input', val: '`n` must be integer, not string' }]);
  assert.deepEqual(call(tool(() => 'x'), 'not json')[1].tag, 'invalid-input');
  const loose = defineTool({ name: 'l', description: 'loose', input: { type: 'object', properties: { limit: { type: 'integer', default: 5 } } }, run: (a) => `${a.limit}:${Object.keys(a)}` });
  assert.equal(call(loose, '{"__proto__":{"limit":"ten"}}')[1].content, '5:__proto__,limit');
});

test('host errors arrive as the kinds the model acts on', () => {
  const read = tool((_, ctx) => ctx.readText('missing.txt'));
  assert.deepEqual(call(read), ['err', { tag: 'retry', val: '`missing.txt`: no such file' }]);
  const named = tool((_, ctx) => ctx.writeText('/notes/x/../a.md', 'x'));
  assert.deepEqual(call(named), ['err', { tag: 'denied', val: 'no grant for `/notes/a.md`' }]);
  const shell = tool((_, ctx) => {
    try {
      return ctx.run('ls | wc -l');
    } catch (err) {
      if (err instanceof DryRun) return `dry run: ${err.message}`;
      throw err;
    }
  });
  assert.equal(call(shell)[1].content, 'dry run: would run it');
  const argv = tool((_, ctx) => {
    const done = ctx.run(['echo', 'hi'], { env: { A: 1 } });
    return `${done.stdout} ${typeof done.durationMs}`;
  });
  assert.equal(call(argv)[1].content, 'echo hi number');
  const walked = tool((_, ctx) => ({ content: 'w', structured: { entries: ctx.walk('.') } }));
  assert.match(call(walked)[1].structured, /"size":3,"modifiedNs":5/);
  const greeted = tool((_, ctx) => ctx.callService('greet', { name: 'Ada' }).greeting, { capabilities: ['service:greet'] });
  assert.equal(call(greeted)[1].content, 'hello, Ada');
  assert.deepEqual(call(tool((_, ctx) => ctx.callService('cron'), { capabilities: ['service:cron'] }))[1].tag, 'retry');
  assert.deepEqual(tool(() => '', { capabilities: ['service:greet'] }).describe().capabilities, [{ tag: 'service', val: 'greet' }]);
  call(tool((_, ctx) => { ctx.log.info('hello'); return ''; }));
  assert.deepEqual(logged.at(-1), ['info', 'hello']);
});

test('paths stay in the workspace or a declared directory, with messages that say which', () => {
  const ctx = new Context(wit, ['notes']);
  assert.equal(ctx.path('src/../a.txt'), 'a.txt');
  assert.equal(ctx.path('/home/me/proj/src/x.js'), 'src/x.js');
  assert.equal(ctx.path('/home/me/proj'), '.');
  assert.equal(ctx.path('/notes/a/../b.md'), '/notes/b.md');
  assert.equal(ctx.settings.k, 1);
  const refused = (c, path, kind, message) => assert.throws(() => c.path(path), (err) => err instanceof kind && message.test(err.message));
  refused(ctx, '../secret', Denied, /leads outside the workspace/);
  refused(ctx, '/notes/../etc', Denied, /leads outside the directory \/notes/);
  refused(ctx, '/etc/passwd', Denied, /is outside the workspace/);
  refused(ctx, '/home/me/project2/x', Denied, /is outside the workspace/);
  refused(ctx, '  ', InvalidInput, /the path is empty/);
  refused(ctx, undefined, InvalidInput, /must be a string, not undefined/);
  const none = new Context({ ...wit, workspaceRoot: undefined }, []);
  refused(none, 'a.txt', Denied, /not granted access to the workspace/);
  refused(none, '/home/me/proj/a.txt', Denied, /not granted access to the workspace/);
});

test('what goes to the host is whole Unicode and of the types it takes, or the call says why', () => {
  const half = '😀'.slice(0, 1);
  // Text the tool returns or throws: a lone surrogate becomes U+FFFD.
  assert.deepEqual(call(tool(() => `a${half}`))[1].content, 'a\ufffd');
  assert.deepEqual(call(tool(() => ({ content: half, structured: { s: half } })))[1], {
    content: '\ufffd',
    structured: '{"s":"\\ud83d"}',
    changedPaths: [],
  });
  assert.deepEqual(call(tool(() => { throw new InvalidInput(`bad ${half}`); })), ['err', { tag: 'invalid-input', val: 'bad \ufffd' }]);
  assert.deepEqual(call(tool(() => { throw new Failed('x', half); }))[1].val.hint, '\ufffd');
  call(tool((_, ctx) => { ctx.log.warn(half); return ''; }));
  assert.deepEqual(logged.at(-1), ['warn', '\ufffd']);
  // What the host is asked to use is never changed: refused.
  const refusedWith = (run, message) => {
    const [kind, got] = call(tool(run, { capabilities: ['workspace:write', 'commands'] }));
    assert.equal(kind, 'err');
    assert.equal(got.tag, 'invalid-input', JSON.stringify(got));
    assert.match(got.val, message);
  };
  refusedWith((_, ctx) => ctx.readText(`a${half}.txt`), /the path holds half a character/);
  refusedWith((_, ctx) => ctx.run(['echo', half]), /an argument of the command holds half a character/);
  refusedWith((_, ctx) => ctx.run('ls', { cwd: 5 }), /`cwd` must be a workspace-relative path/);
  refusedWith((_, ctx) => ctx.run('ls', { timeoutMs: Number.NaN }), /`timeoutMs` must be a number of milliseconds/);
  refusedWith((_, ctx) => ctx.readBytes('a.txt', { maxBytes: -1 }), /`maxBytes` must be a whole number/);
  refusedWith((_, ctx) => ctx.walk('.', { maxDepth: 1.5 }), /`maxDepth` must be a whole number/);
  // An absent WIT option is `undefined`, whatever the engine gave.
  const ctx = new Context({ ...wit, agent: null, session: null, channel: null, chat: null }, []);
  assert.deepEqual([ctx.agent, ctx.session, ctx.channel, ctx.chat], [undefined, undefined, undefined, undefined]);
});
