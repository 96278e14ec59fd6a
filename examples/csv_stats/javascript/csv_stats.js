// `csv_stats`: a CSV file's rows, and each column's range and mean.
import { defineTool, s, InvalidInput } from '@toolhost/sdk';

const column = s.object({
  name: s.string('The header\'s name.'),
  min: s.optional(s.number('The smallest value, if every value is a number.')),
  max: s.optional(s.number('The largest value, if every value is a number.')),
  mean: s.optional(s.number('The mean, if every value is a number.')),
});

export const tool = defineTool({
  name: 'csv_stats',
  description: 'Count the rows of a CSV file in the workspace (a header line, then rows; no quoted commas) and give each column\'s min, max and mean when its values are numbers.',
  input: s.object({ path: s.string('Workspace-relative path of the CSV file.') }),
  output: s.object({ rows: s.integer('How many rows.'), columns: s.array(column, 'Each column.') }),
  capabilities: ['workspace:read'],
  idempotent: true,
  run({ path }, ctx) {
    const lines = ctx.readText(path).split('\n').filter((l) => l.trim()).map((l) => l.split(',').map((f) => f.trim()));
    if (!lines.length) throw new InvalidInput(`\`${path}\` is empty: a CSV file starts with a header line`);
    const [header, ...rows] = lines;
    const bad = rows.findIndex((r) => r.length !== header.length);
    if (bad >= 0) throw new InvalidInput(`row ${bad + 1} has ${rows[bad].length} fields; the header has ${header.length}`);
    const columns = header.map((name, i) => {
      const numbers = rows.map((r) => (r[i] === '' ? NaN : Number(r[i])));
      if (!rows.length || numbers.some(Number.isNaN)) return { name };
      return { name, min: Math.min(...numbers), max: Math.max(...numbers), mean: numbers.reduce((a, b) => a + b, 0) / numbers.length };
    });
    return { content: `${path}: ${rows.length} rows, ${columns.length} columns`, structured: { rows: rows.length, columns } };
  },
});
