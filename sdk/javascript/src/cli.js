#!/usr/bin/env node
// `toolhost-js build [ENTRY] [-o OUT]`: bundle a tool module and its
// imports into one ES module and make it a wasm32-wasip2 component with
// componentize-qjs (QuickJS, its state snapshotted after the module ran),
// against the WIT this SDK ships.

import { componentize } from 'componentize-qjs';
import { rolldown } from 'rolldown';
import { firstError } from './summary.js';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WIT = join(dirname(fileURLToPath(import.meta.url)), '..', 'wit');
const SETUP = fileURLToPath(new URL('./setup.js', import.meta.url));
const USAGE = 'usage: toolhost-js build [ENTRY.js] [-o OUT.wasm] [--verbose]   (ENTRY defaults to package.json "main", OUT to ENTRY with .wasm; --verbose shows a failure whole)';
let verbose = false;

/** A failure the build explains itself; thrown, so the work directory
 * is removed before the process exits. */
class BuildError extends Error {}

function fail(message) {
  throw new BuildError(message);
}

async function entryOf(args) {
  if (args.length) return args[0];
  try {
    const main = JSON.parse(await readFile('package.json', 'utf8')).main;
    if (main) return main;
  } catch {}
  fail(`no entry module given and no "main" in ./package.json\n${USAGE}`);
}

async function build(argv) {
  const args = [];
  let out;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '-o' || argv[i] === '--out') out = argv[++i];
    else if (argv[i] === '-v' || argv[i] === '--verbose') verbose = true;
    else if (argv[i].startsWith('-')) fail(`unknown option ${argv[i]}\n${USAGE}`);
    else args.push(argv[i]);
  }
  const entry = resolve(await entryOf(args));
  out = resolve(out ?? join(dirname(entry), `${basename(entry, extname(entry))}.wasm`));
  const work = await mkdtemp(join(tmpdir(), 'toolhost-js-'));
  try {
    // Every dependency is bundled, ES module or CommonJS (`main`); an
    // import that resolves to nothing stops the build, naming it.
    const unresolved = [];
    // The SDK's setup first, before the tool's module and any dependency
    // it imports take what they need from the globals it fills in.
    const first = join(work, 'entry.js');
    await writeFile(first, `import ${JSON.stringify(SETUP)};\nexport * from ${JSON.stringify(entry)};\n`);
    const bundle = await rolldown({
      input: first,
      external: [/^toolhost:/],
      platform: 'neutral',
      resolve: { mainFields: ['module', 'main'], conditionNames: ['import', 'module', 'require', 'default'] },
      logLevel: 'warn',
      onLog(level, log, next) {
        if (log.code !== 'UNRESOLVED_IMPORT') return next(level, log);
        const name = log.exporter ?? /resolve '([^']+)'/.exec(log.message)?.[1] ?? log.message;
        // A dependency's own optional import (a Node built-in behind a
        // check) is left out with a word; the tool's own must resolve.
        if (log.id?.includes('/node_modules/')) {
          console.error(`warning: \`${name}\` (imported by ${log.id}) is not bundled: the tool fails if that code runs`);
        } else unresolved.push(name);
      },
    });
    const bundled = join(work, 'tool.js');
    await bundle.write({ file: bundled, format: 'esm' });
    if (unresolved.length) {
      const names = unresolved.map((m) => `\`${m}\``).join(', ');
      fail(`cannot bundle ${names}: not found from ${entry}; install it (\`npm install NAME\`) or fix the import`);
    }
    const source = await readFile(bundled, 'utf8');
    if (!/export\s*\{[^}]*\btool\b[^}]*\}|export\s+const\s+tool\b/.test(source)) {
      fail(`${entry} does not export \`tool\`; end it with \`export const tool = defineTool({ ... })\``);
    }
    // `sync`: the component-model ABI without its async extension, which
    // the host does not enable.
    const { component } = await componentize({ jsSource: source, jsPath: bundled, witPath: WIT, world: 'tool-plugin', sync: true });
    await writeFile(out, component);
    console.error(`built ${out} (${(component.length / 1e6).toFixed(1)} MB)`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const [command, ...rest] = process.argv.slice(2);
const said = (err) => {
  const message = err?.message ?? String(err);
  if (err instanceof BuildError || verbose) return message;
  return `${firstError(message)}\n(\`toolhost-js build --verbose\` shows the whole message)`;
};
(command === 'build' ? build(rest) : Promise.reject(new BuildError(USAGE))).catch((err) => {
  console.error(`error: ${said(err)}`);
  process.exit(2);
});
