// The toolhost SDK for JavaScript: declare a tool with its schemas, get
// checked arguments, report the four error kinds, and reach the workspace,
// the command broker and the log through the host. Build the module with
// `toolhost-js build` (componentize-qjs: QuickJS) into a wasm32-wasip2
// component.

// First: the globals QuickJS lacks, and each call's own Math.random.
import { freshCall } from './setup.js';
import * as files from 'toolhost:plugin/files@0.1.0';
import * as broker from 'toolhost:plugin/commands@0.1.0';
import { log as hostLog } from 'toolhost:plugin/log@0.1.0';
import * as hostServices from 'toolhost:plugin/services@0.1.0';
import { check, s } from './schema.js';
import { decodeUtf8, encodeUtf8, isWellFormed, wellFormed } from './utf8.js';

export { s, check };

const KINDS = ['invalid-input', 'retry', 'denied', 'failed'];

/**
 * A result that is not a success, of one of the kinds the model acts on:
 * `invalid-input`, `retry`, `denied` or `failed` (use the subclasses).
 */
export class ToolError extends Error {
  constructor(kind, message, hint) {
    super(String(message));
    this.name = 'ToolError';
    const spelled = String(kind).replace(/_/g, '-');
    this.kind = KINDS.includes(spelled) ? spelled : 'failed';
    this.hint = hint === undefined || hint === null ? undefined : String(hint);
  }
}

/** The arguments are wrong: the model fixes its call. */
export class InvalidInput extends ToolError {
  constructor(message) {
    super('invalid-input', message);
  }
}

/** A condition the model can correct (a file not found, text not unique): try again differently. */
export class Retry extends ToolError {
  constructor(message) {
    super('retry', message);
  }
}

/** A policy or a missing grant refused the action. */
export class Denied extends ToolError {
  constructor(message) {
    super('denied', message);
  }
}

/** The tool failed for another reason; `hint` says what to do next. */
export class Failed extends ToolError {
  constructor(message, hint) {
    super('failed', message, hint);
  }
}

/**
 * The broker's answer to a command in a dry run: the message says what it
 * would have done, nothing ran. A `Denied` if not caught; a tool that
 * supports dry runs returns the message instead.
 */
export class DryRun extends Denied {}

/** A command needed a person's confirmation and did not get it. A `Denied` if not caught. */
export class NotConfirmed extends Denied {}

const GRANT_REMEDY = '--grant TOOL=';

/**
 * `workspace:read`, `workspace:write`, `commands`, `network:HOST`,
 * `dir:NAME:read` or `dir:NAME:write`, the words of `--grant`, as the WIT
 * capabilities `describe` returns.
 */
function capabilities(words) {
  const out = [];
  const hosts = [];
  for (const word of words) {
    const [kind, rest, access] = word.split(':');
    if (word === 'workspace:read') out.push({ tag: 'workspace-read' });
    else if (word === 'workspace:write') out.push({ tag: 'workspace-write' });
    else if (word === 'commands') out.push({ tag: 'commands' });
    else if (kind === 'network' && rest) hosts.push(word.slice('network:'.length));
    else if (kind === 'service' && /^[a-z][a-z0-9_.-]*$/.test(rest ?? '') && access === undefined) {
      out.push({ tag: 'service', val: rest });
    }
    else if (kind === 'dir' && rest && (access === 'read' || access === 'write')) {
      out.push({ tag: 'directory', val: { name: rest, writable: access === 'write' } });
    } else {
      throw new Error(
        `capability \`${word}\`: use workspace:read, workspace:write, commands, network:HOST, dir:NAME:read, dir:NAME:write or service:NAME`,
      );
    }
  }
  if (hosts.length) out.push({ tag: 'network', val: hosts });
  return out;
}

/** An error thrown by a host import (`{tag, val}`, possibly inside an Error's `payload`). */
function hostError(err) {
  const variant = err && typeof err === 'object' && 'payload' in err ? err.payload : err;
  return variant && typeof variant === 'object' && typeof variant.tag === 'string' ? variant : null;
}

/**
 * A host import's error as the tool error the model acts on: the class
 * `kinds` names for its tag, else `other`; anything not from the host as it is.
 */
function fromHost(err, kinds, other) {
  const e = hostError(err);
  if (!e) return err;
  const Kind = kinds[e.tag] ?? other;
  return new Kind(e.val);
}

const fileError = (err) => fromHost(err, { 'not-found': Retry, invalid: Retry, denied: Denied }, Failed);
const commandError = (err) =>
  fromHost(err, { invalid: InvalidInput, failed: Failed, 'dry-run': DryRun, 'not-confirmed': NotConfirmed }, Denied);
const serviceError = (err) => fromHost(err, { denied: Denied, 'not-found': Retry, invalid: InvalidInput }, Failed);

/** Log lines, forwarded by the host to its log (stderr). */
export const log = {
  trace: (message) => hostLog('trace', wellFormed(message)),
  debug: (message) => hostLog('debug', wellFormed(message)),
  info: (message) => hostLog('info', wellFormed(message)),
  warn: (message) => hostLog('warn', wellFormed(message)),
  error: (message) => hostLog('error', wellFormed(message)),
};

/** `text` if it is whole Unicode, else an InvalidInput naming `what`:
 * what the host is asked to use (a path, a command) is never changed. */
function whole(text, what) {
  if (!isWellFormed(text)) {
    throw new InvalidInput(`${what} holds half a character (a lone UTF-16 surrogate, from text cut inside a character); give whole characters`);
  }
  return text;
}

/** Who is calling and how, and the host services of this call. */
export class Context {
  /** `ctx`: the WIT call context; `dirs`: the named directories the tool declares. */
  constructor(ctx, dirs = []) {
    this.dirs = dirs;
    // An absent WIT option is `undefined` here, whatever the engine gives.
    this.callId = ctx.callId;
    this.agent = ctx.agent ?? undefined;
    this.session = ctx.session ?? undefined;
    this.channel = ctx.channel ?? undefined;
    this.chat = ctx.chat ?? undefined;
    /** The workspace root's host path, if the workspace is granted. */
    this.workspaceRoot = ctx.workspaceRoot ?? undefined;
    /** True when the caller asked to describe, not change. */
    this.dryRun = ctx.dryRun;
    /** This tool's settings from the host configuration. */
    this.settings = JSON.parse(ctx.settings || '{}');
    /** Paths the call changed; `writeText` adds to it. */
    this.changedPaths = [];
    this.log = log;
  }

  /**
   * `path` as the host resolves it: workspace-relative (an absolute path
   * under the workspace root is made relative), or `/NAME/...` under a
   * directory NAME the tool declares. Paths leading out of either are
   * refused.
   */
  path(path) {
    if (typeof path !== 'string') {
      throw new InvalidInput(`the path must be a string, not ${path === null ? 'null' : typeof path}`);
    }
    const given = whole(path, 'the path').trim();
    if (given === '') {
      throw new InvalidInput('the path is empty; give a path relative to the workspace root, e.g. `src/main.js`');
    }
    const root = this.workspaceRoot?.replace(/\/+$/, '');
    const noWorkspace = () =>
      new Denied(
        `this tool was not granted access to the workspace; a person can grant it with \`${GRANT_REMEDY}workspace:read\` (or workspace:write)`,
      );
    if (!given.startsWith('/')) {
      if (!root) throw noWorkspace();
      return normalise(given, '', `\`${given}\` leads outside the workspace; only paths under the workspace root are allowed`);
    }
    if (root && (given === root || given.startsWith(`${root}/`))) {
      return normalise(given.slice(root.length), '', `\`${given}\` leads outside the workspace`);
    }
    const name = given.split('/')[1];
    if (this.dirs.includes(name)) {
      return normalise(given.slice(name.length + 1), `/${name}/`, `\`${given}\` leads outside the directory /${name}`);
    }
    if (!root) throw noWorkspace();
    throw new Denied(`\`${given}\` is outside the workspace; give a path relative to the workspace root`);
  }

  /** The bytes of a file, at most `maxBytes` (default 64 MiB). */
  readBytes(path, { maxBytes = 64 * 1024 * 1024 } = {}) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new InvalidInput(`\`maxBytes\` must be a whole number of bytes, 0 or more, not ${String(maxBytes)}`);
    }
    const at = this.path(path);
    try {
      return files.read(at, maxBytes);
    } catch (err) {
      throw fileError(err);
    }
  }

  /** A UTF-8 text file's content; other bytes are refused as invalid input. */
  readText(path, options) {
    const bytes = this.readBytes(path, options);
    try {
      return decodeUtf8(bytes);
    } catch {
      throw new InvalidInput(`\`${this.path(path)}\` is not UTF-8 text`);
    }
  }

  /** Replace or create a file atomically (parents are created); the path is added to `changedPaths`. */
  writeText(path, text) {
    const at = this.path(path);
    try {
      files.writeAtomic(at, encodeUtf8(text));
    } catch (err) {
      throw fileError(err);
    }
    if (!at.startsWith('/')) this.changedPaths.push(at);
  }

  /**
   * The tree under a directory, as ripgrep walks it: `[{path, kind, size, modifiedNs}]`.
   * Options: `respectIgnore` (true), `hidden` (false), `maxDepth`, `metadata` (false).
   */
  walk(path, { respectIgnore = true, hidden = false, maxDepth, metadata = false } = {}) {
    if (maxDepth != null && !(Number.isSafeInteger(maxDepth) && maxDepth >= 0)) {
      throw new InvalidInput(`\`maxDepth\` must be a whole number, 0 or more, not ${String(maxDepth)}`);
    }
    const at = this.path(path);
    const options = { respectIgnore: Boolean(respectIgnore), hidden: Boolean(hidden), maxDepth: maxDepth ?? undefined, metadata: Boolean(metadata) };
    try {
      return files
        .walk(at, options)
        .map((e) => ({ path: e.path, kind: e.kind, size: Number(e.size), modifiedNs: Number(e.modifiedNs) }));
    } catch (err) {
      throw fileError(err);
    }
  }

  /**
   * Call the embedding application's service `name` (declared as
   * `service:NAME` and granted) with `input`; its JSON answer.
   */
  callService(name, input = {}) {
    let answer;
    try {
      answer = hostServices.call(whole(String(name), 'the service name'), JSON.stringify(input));
    } catch (err) {
      throw serviceError(err);
    }
    return JSON.parse(answer);
  }

  /**
   * Run a command through the host's broker: an argument vector (run
   * directly) or a shell line. Returns `{exitCode, stdout, stderr,
   * timedOut, truncated, durationMs}`. Needs the `commands` capability.
   */
  run(command, { cwd, timeoutMs, env = {} } = {}) {
    const program = Array.isArray(command)
      ? { tag: 'argv', val: command.map((a) => whole(String(a), 'an argument of the command')) }
      : { tag: 'shell', val: whole(String(command), 'the command') };
    if (cwd !== undefined && cwd !== null && typeof cwd !== 'string') {
      throw new InvalidInput(`\`cwd\` must be a workspace-relative path (a string), not ${typeof cwd}`);
    }
    if (timeoutMs !== undefined && timeoutMs !== null && !(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw new InvalidInput(`\`timeoutMs\` must be a number of milliseconds, 0 or more, not ${String(timeoutMs)}`);
    }
    const request = {
      program,
      cwd: cwd == null ? undefined : whole(cwd, '`cwd`'),
      timeoutMs: timeoutMs == null ? undefined : Math.min(Math.round(timeoutMs), 0xffffffff),
      env: Object.entries(env ?? {}).map(([k, v]) => [whole(String(k), 'an environment name'), whole(String(v), `\`${k}\``)]),
    };
    try {
      const done = broker.run(request);
      return { ...done, exitCode: done.exitCode ?? undefined, outputId: done.outputId ?? undefined, durationMs: Number(done.durationMs) };
    } catch (err) {
      throw commandError(err);
    }
  }
}

/** `relative` with `.` and `..` resolved, under `prefix`; `..` past its start is refused with `escape`. */
function normalise(relative, prefix, escape) {
  const parts = [];
  for (const part of relative.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) throw new Denied(escape);
      parts.pop();
    } else parts.push(part);
  }
  if (prefix) return `${prefix}${parts.join('/')}`.replace(/\/$/, '');
  return parts.length ? parts.join('/') : '.';
}

/** A call's return value as the WIT `tool-output`. */
function output(value, ctx) {
  if (value && typeof value.then === 'function') {
    throw new Failed('`run` returned a Promise', 'the host calls a tool synchronously: make `run` a plain (not async) function');
  }
  if (typeof value === 'string') return { content: wellFormed(value), structured: undefined, changedPaths: ctx.changedPaths };
  if (value && typeof value === 'object' && typeof value.content === 'string') {
    const extra = value.changedPaths ?? [];
    if (!Array.isArray(extra) || !extra.every((p) => typeof p === 'string')) {
      throw new Failed('`changedPaths` must be an array of workspace-relative paths (strings)');
    }
    let structured;
    if (value.structured !== undefined) {
      try {
        structured = JSON.stringify(value.structured, (_, v) => (typeof v === 'bigint' ? Number(v) : v));
      } catch (err) {
        throw new Failed(`the structured result is not JSON: ${err?.message ?? err}`);
      }
    }
    // Text is made whole; JSON.stringify already wrote any lone surrogate as an escape.
    const changedPaths = [...new Set([...ctx.changedPaths, ...extra])].map(wellFormed);
    return { content: wellFormed(value.content), structured, changedPaths };
  }
  throw new Failed(
    `the tool returned ${value === undefined ? 'nothing' : typeof value}`,
    'a tool returns a string, or { content, structured } with a string content',
  );
}

/** Any thrown value as the WIT `tool-error`: a ToolError keeps its kind, anything else is `failed`. */
function toolError(err) {
  try {
    if (err instanceof ToolError) {
      const hint = err.hint === undefined ? undefined : wellFormed(err.hint);
      if (err.kind === 'failed') return { tag: 'failed', val: { message: wellFormed(err.message), hint } };
      return { tag: err.kind, val: wellFormed(err.message) };
    }
    const variant = hostError(err);
    if (variant) return toolError(fileError(variant));
    const message = err instanceof Error ? String(err.message) : String(err);
    return { tag: 'failed', val: { message: wellFormed(message) || 'the tool failed', hint: undefined } };
  } catch {
    return { tag: 'failed', val: { message: 'the tool threw a value that cannot be shown', hint: undefined } };
  }
}

/**
 * Declare a tool. Export what it returns as `tool`:
 *
 *   export const tool = defineTool({ name, description, input, output, capabilities, run });
 *
 * - `input`: the JSON Schema of the arguments (an object schema, e.g. from `s.object`);
 * - `output`: the JSON Schema of `structured`, if the tool returns one;
 * - `capabilities`: what it needs, in the words of `--grant` (`workspace:read`, ...);
 * - `sensitive`: true if it changes something; `idempotent`, `title`, `version`;
 * - `run(args, ctx)`: returns a string or `{ content, structured }`; throws
 *   `InvalidInput`, `Retry`, `Denied` or `Failed`; anything else thrown is `failed`.
 */
export function defineTool(spec) {
  for (const key of ['name', 'description', 'input', 'run']) {
    if (spec[key] === undefined) throw new Error(`defineTool: \`${key}\` is missing`);
  }
  if (spec.input?.type !== 'object') {
    throw new Error('defineTool: `input` must be an object schema (e.g. `s.object({ ... })`): a tool takes named arguments');
  }
  if (spec.output !== undefined && spec.output?.type !== 'object') {
    throw new Error('defineTool: `output` must be an object schema (e.g. `s.object({ ... })`): MCP clients take only those');
  }
  const dirs = (spec.capabilities ?? []).filter((w) => w.startsWith('dir:')).map((w) => w.split(':')[1]);
  const info = {
    name: spec.name,
    description: spec.description,
    inputSchema: JSON.stringify(spec.input),
    outputSchema: spec.output === undefined ? undefined : JSON.stringify(spec.output),
    sensitive: Boolean(spec.sensitive),
    capabilities: capabilities(spec.capabilities ?? []),
    version: spec.version ?? '0.1.0',
    title: spec.title,
    idempotent: Boolean(spec.idempotent),
  };
  return {
    describe: () => info,
    call(argsText, wit) {
      try {
        freshCall(wit?.callId ?? '');
        const ctx = new Context(wit, dirs);
        let args;
        try {
          args = check(spec.input, JSON.parse(argsText));
        } catch (err) {
          throw new InvalidInput(err?.message ?? String(err));
        }
        return output(spec.run(args, ctx), ctx);
      } catch (err) {
        throw toolError(err);
      }
    },
  };
}
