// One tool that walks through the JavaScript SDK: each error kind, a plain
// throw, defaults, a write, a read outside the workspace, the broker and
// settings. tests/e2e/scaffold.rs builds it and runs sdk_tour.json.
import { defineTool, s, Denied, Failed, InvalidInput, Retry } from '@toolhost/sdk';

export const tool = defineTool({
  name: 'sdk_tour',
  description: 'Exercise the toolhost SDK: errors, defaults, files, commands and the log.',
  input: s.object({
    action: s.enum(['throw', 'fail', 'retry', 'deny', 'invalid', 'defaults', 'write', 'escape', 'run', 'nothing', 'odd-throw', 'odd-hint']),
    text: s.optional(s.string('Text to write or echo.')),
    times: s.integer({ description: 'How many times to repeat the text.', default: 2, minimum: 1 }),
  }),
  capabilities: ['workspace:write', 'commands'],
  sensitive: true,
  run({ action, text, times }, ctx) {
    ctx.log.info(`sdk_tour: ${action}`);
    console.log('sdk_tour', { action }); // QuickJS has no console of its own: the SDK's writes to the log
    switch (action) {
      case 'throw': throw new Error('it broke');
      case 'fail': throw new Failed('it failed', 'ask for less');
      case 'retry': throw new Retry('look again');
      case 'deny': throw new Denied('not allowed here');
      case 'invalid': throw new InvalidInput('`text` must not be empty');
      // Through TextEncoder and TextDecoder, which the SDK gives QuickJS.
      case 'defaults': return `times=${times} text=${text === undefined ? 'none' : new TextDecoder().decode(new TextEncoder().encode(text))}`;
      case 'write': ctx.writeText('out/a.txt', text.repeat(times)); return { content: 'wrote out/a.txt', structured: { written: text.length * times } };
      case 'escape': return ctx.readText('../outside.txt');
      case 'run': return ctx.run(['echo', text]).stdout;
      case 'odd-throw': throw undefined;
      case 'odd-hint': throw new Failed('it failed', 42);
      default: return undefined;
    }
  },
});
