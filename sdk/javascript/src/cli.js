#!/usr/bin/env node
// `toolhost-js build [ENTRY] [-o OUT]`: bundle a tool module and its
// imports into one ES module and make it a wasm32-wasip2 component with
// componentize-js, against the WIT this SDK ships.

import { componentize } from '@bytecodealliance/componentize-js';
import { rolldown } from 'rolldown';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WIT = join(dirname(fileURLToPath(import.meta.url)), '..', 'wit');
const USAGE = 'usage: toolhost-js build [ENTRY.js] [-o OUT.wasm]   (ENTRY defaults to package.json "main", OUT to ENTRY with .wasm)';

function fail(message) {
  console.error(`error: ${message}`);
  process.exit(2);
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
    else if (argv[i].startsWith('-')) fail(`unknown option ${argv[i]}\n${USAGE}`);
    else args.push(argv[i]);
  }
  const entry = resolve(await entryOf(args));
  out = resolve(out ?? join(dirname(entry), `${basename(entry, extname(entry))}.wasm`));
  const work = await mkdtemp(join(tmpdir(), 'toolhost-js-'));
  try {
    const bundle = await rolldown({ input: entry, external: [/^toolhost:/], platform: 'neutral', logLevel: 'warn' });
    const bundled = join(work, 'tool.js');
    await bundle.write({ file: bundled, format: 'esm' });
    const source = await readFile(bundled, 'utf8');
    if (!/export\s*\{[^}]*\btool\b[^}]*\}|export\s+const\s+tool\b/.test(source)) {
      fail(`${entry} does not export \`tool\`; end it with \`export const tool = defineTool({ ... })\``);
    }
    const { component } = await componentize({ sourcePath: bundled, witPath: WIT, worldName: 'tool-plugin' });
    await writeFile(out, component);
    console.error(`built ${out} (${(component.length / 1e6).toFixed(1)} MB)`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'build') {
  build(rest).catch((err) => fail(err?.message ?? String(err)));
} else {
  fail(USAGE);
}
