// `node build.mjs OUT.wasm [WIT_DIR]`: make the component of inventory.js
// (beside this file) with componentize-js, after `npm install` here. The
// target world is `inventory` of the fixture's WIT (WIT_DIR, by default
// tests/fixtures/fixture_plain/wit of this repository, used in place, not
// copied) plus the WASI imports that count-lines (wasi:filesystem) and
// env-var (wasi:cli/environment) need: JavaScript can import only what the
// target world names. The WASI WIT is the one jco ships
// (lib/wit/builtin/0.2.12).
import { componentize } from '@bytecodealliance/componentize-js';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const [out, fixtureWit = resolve(here, '../../fixtures/fixture_plain/wit')] = process.argv.slice(2);
if (!out) {
  console.error('usage: node build.mjs OUT.wasm [WIT_DIR]');
  process.exit(2);
}
const wasi = join(here, 'node_modules', '@bytecodealliance', 'jco', 'lib', 'wit', 'builtin', '0.2.12');

const work = await mkdtemp(join(tmpdir(), 'inventory-js-'));
try {
  const wit = join(work, 'wit');
  await mkdir(join(wit, 'deps'), { recursive: true });
  await symlink(resolve(fixtureWit), join(wit, 'deps', 'inventory'));
  for (const pkg of ['wasi-cli', 'wasi-clocks', 'wasi-filesystem', 'wasi-io', 'wasi-random', 'wasi-sockets']) {
    await symlink(join(wasi, pkg), join(wit, 'deps', pkg));
  }
  await writeFile(
    join(wit, 'world.wit'),
    `package toolhost-test:inventory-js;

world inventory-js {
    include example:inventory/inventory@0.1.0;
    import wasi:cli/environment@0.2.12;
    import wasi:filesystem/preopens@0.2.12;
    import wasi:filesystem/types@0.2.12;
}
`,
  );
  const { component } = await componentize({
    sourcePath: join(here, 'inventory.js'),
    witPath: wit,
    worldName: 'inventory-js',
  });
  await writeFile(out, component);
  console.error(`built ${out} (${component.length} bytes)`);
} finally {
  await rm(work, { recursive: true, force: true });
}
