// `{name}`: counts the lines, words and characters of a text file in the
// workspace. Change the schemas, the description and `run` to make it yours.
import { defineTool, s } from '@toolhost/sdk';

export const tool = defineTool({
  name: '{name}',
  description: 'Count the lines, words and characters of a UTF-8 text file in the workspace.',
  input: s.object({ path: s.string('Workspace-relative path of the text file.') }),
  output: s.object({
    lines: s.integer('Lines in the file.'),
    words: s.integer('Words: runs of characters between whitespace.'),
    chars: s.integer('Characters (Unicode scalar values).'),
  }),
  capabilities: ['workspace:read'],
  idempotent: true,
  run({ path }, ctx) {
    const text = ctx.readText(path);
    const counts = {
      lines: text.split('\n').length - (text === '' || text.endsWith('\n') ? 1 : 0),
      words: text.split(/\s+/).filter(Boolean).length,
      chars: [...text].length,
    };
    const summary = `${ctx.path(path)}: ${counts.lines} lines, ${counts.words} words, ${counts.chars} characters`;
    return { content: summary, structured: counts };
  },
});
