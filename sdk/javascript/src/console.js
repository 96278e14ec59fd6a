// A `console` for an engine without one (QuickJS): its lines go to the
// host's log, so a tool's or a dependency's `console.log` does not fail.
// Nothing here throws: a value that cannot be shown is written as such.

/** One argument as text: strings as they are, an Error with its stack,
 * anything else as JSON where it can be. */
function shown(a) {
  try {
    if (typeof a === 'string') return a;
    if (a instanceof Error) return a.stack ? `${a}\n${a.stack}` : String(a);
    if (typeof a === 'bigint') return `${a}n`;
    const json = JSON.stringify(a);
    return json === undefined ? String(a) : json;
  } catch {
    try {
      return String(a);
    } catch {
      return '[a value that cannot be shown]';
    }
  }
}

/** One line of `console.log(...)`'s arguments. */
export function consoleLine(args) {
  return args.map(shown).join(' ');
}

/** A console whose methods call `write(level, line)` with the log's levels. */
export function consoleFor(write) {
  let depth = 0;
  const counts = new Map();
  const timers = new Map();
  const to = (level) => (...args) => write(level, '  '.repeat(depth) + consoleLine(args));
  const now = () => (typeof performance === 'object' && performance?.now ? performance.now() : Date.now());
  const info = to('info');
  return {
    log: info,
    info,
    debug: to('debug'),
    trace: to('trace'),
    warn: to('warn'),
    error: to('error'),
    dir: (value) => info(value),
    table: (value) => info(value),
    assert: (condition, ...args) => {
      if (!condition) to('error')('Assertion failed', ...args);
    },
    count: (label = 'default') => {
      counts.set(label, (counts.get(label) ?? 0) + 1);
      info(`${label}: ${counts.get(label)}`);
    },
    countReset: (label = 'default') => counts.delete(label),
    group: (...args) => {
      if (args.length) info(...args);
      depth += 1;
    },
    groupCollapsed: (...args) => {
      if (args.length) info(...args);
      depth += 1;
    },
    groupEnd: () => {
      depth = Math.max(0, depth - 1);
    },
    time: (label = 'default') => timers.set(label, now()),
    timeLog: (label = 'default', ...args) => {
      if (timers.has(label)) info(`${label}: ${(now() - timers.get(label)).toFixed(3)} ms`, ...args);
    },
    timeEnd: (label = 'default') => {
      if (timers.has(label)) info(`${label}: ${(now() - timers.get(label)).toFixed(3)} ms`);
      timers.delete(label);
    },
  };
}
