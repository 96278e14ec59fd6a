// What `toolhost-js build` says of a failure in one line (cli.js).

/** The line of a failure that says what went wrong: the error the tool's
 * module threw while it was loaded (`ReferenceError: ...`, or QuickJS's
 * `Error: ...` after componentize-qjs's own words), else the first. */
export function firstError(message) {
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean);
  for (const line of lines) {
    const thrown = /\b((?:[A-Z]\w*)?(?:Error|Exception): .*)$/.exec(line);
    if (thrown) return thrown[1];
  }
  return lines[0] ?? 'the build failed';
}
