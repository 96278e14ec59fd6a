// `node --import ./test/fake-host.mjs --test test/`: the SDK's host imports
// (`toolhost:plugin/...`) answered by fake-imports.mjs, so index.js runs
// natively under node's test runner.
import { register } from 'node:module';

register('./fake-hooks.mjs', import.meta.url);
