// A `console` for an engine without one (QuickJS): its lines go to the
// host's log, so a tool's or a dependency's `console.log` does not fail.

/** One line of `console.log(...)`'s arguments: strings as they are, an
 * Error with its stack, anything else as JSON where it can be. */
export function consoleLine(args) {
  return args
    .map((a) => {
      if (typeof a === 'string') return a;
      if (a instanceof Error) return a.stack ? `${a}\n${a.stack}` : String(a);
      try {
        return JSON.stringify(a) ?? String(a);
      } catch {
        return String(a);
      }
    })
    .join(' ');
}

/** A console whose methods call `write(level, line)` with the log's levels. */
export function consoleFor(write) {
  const to = (level) => (...args) => write(level, consoleLine(args));
  return { log: to('info'), info: to('info'), debug: to('debug'), trace: to('trace'), warn: to('warn'), error: to('error') };
}
