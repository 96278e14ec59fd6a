// The plain fixture (tests/fixtures/fixture_plain) in JavaScript, built
// with componentize-js against the same WIT: world `inventory` of
// example:inventory@0.1.0. No toolhost SDK.
//
// jco/componentize-js conventions: world-level functions are exported
// functions (`count-lines` → `countLines`); an exported interface is an
// exported object named after it (`shelf`); records are objects with
// lowerCamelCase fields; a variant is `{ tag: 'by-name', val: … }` (no
// `val` for a case without payload); an enum is its case name as a string;
// flags are an object of booleans (`{ upper, reversed }`); an option is the
// value or `undefined`/`null`; a tuple is an array; a char a one-code-point
// string; u64 a BigInt; a `result<T, E>` returns T and throws E for err.
//
// Files and environment variables: JavaScript reaches them only through
// WASI imports the target world names, so this module imports
// wasi:filesystem and wasi:cli/environment, and build.mjs targets a world
// that includes `inventory` and adds those imports (the exports, and so the
// tools, are the same).

import { getEnvironment } from 'wasi:cli/environment@0.2.12';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

// toolhost's `environment` interface: the variables it reads.
export const environment = {
  variables() {
    return ['INVENTORY_TOKEN'];
  },
};

export function envVar(name) {
  const found = getEnvironment().find(([key]) => key === name);
  const value = found?.[1];
  // On stderr too, which the host logs (redacted).
  console.error(`read ${name}: ${rustDebug(value)}`);
  return value;
}

// `value` as Rust's `{:?}` shows an `Option<String>` (common escapes).
function rustDebug(value) {
  if (value === undefined) return 'None';
  const escapes = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '\\0' };
  let out = '';
  for (const c of value) {
    const code = c.codePointAt(0);
    out += escapes[c] ?? (code < 0x20 || code === 0x7f ? `\\u{${code.toString(16)}}` : c);
  }
  return `Some("${out}")`;
}

export function greet(name) {
  return `hello, ${name}`;
}

export function countLines(path) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFile(path));
  } catch (e) {
    throw `cannot read ${path}: ${ioError(e)}`;
  }
  // As Rust's `str::lines`: lines end at "\n", the last one need not.
  let lines = 0;
  for (const c of text) {
    if (c === '\n') lines += 1;
  }
  return text.length > 0 && !text.endsWith('\n') ? lines + 1 : lines;
}

// The bytes of the file at `path`, found as wasi-libc (so Rust's std) finds
// it: leading slashes dropped, then under the preopen with the longest
// matching name (the workspace is preopened at `.`, a granted directory
// at `/NAME`).
function readFile(path) {
  const rel = path.replace(/^\/+/, '');
  let best;
  for (const [dir, name] of getDirectories()) {
    const prefix = name === '.' ? '' : name.replace(/^\/+/, '').replace(/\/+$/, '');
    const under = prefix === '' || rel === prefix || rel.startsWith(`${prefix}/`);
    if (under && (best === undefined || prefix.length > best.prefix.length)) {
      best = { dir, prefix };
    }
  }
  if (best === undefined) {
    throw { payload: 'no-entry' };
  }
  const inside = rel.slice(best.prefix.length).replace(/^\/+/, '') || '.';
  const file = best.dir.openAt({ symlinkFollow: true }, inside, {}, { read: true });
  if (file.getType() === 'directory') {
    throw { payload: 'is-directory' }; // as wasi-libc's read() says it
  }
  const chunks = [];
  let size = 0;
  for (;;) {
    const [chunk, end] = file.read(65536n, BigInt(size));
    chunks.push(chunk);
    size += chunk.length;
    if (end || chunk.length === 0) break;
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

// A wasi:filesystem error code as Rust's `io::Error` shows it (wasi-libc's
// strerror and errno), so the error text is the Rust fixture's.
const ERRNO = {
  access: ['Permission denied', 2],
  'bad-descriptor': ['Bad file descriptor', 8],
  invalid: ['Invalid argument', 28],
  io: ['I/O error', 29],
  'is-directory': ['Is a directory', 31],
  loop: ['Symbolic link loop', 32],
  'name-too-long': ['Filename too long', 37],
  'no-entry': ['No such file or directory', 44],
  'not-directory': ['Not a directory', 54],
  'not-permitted': ['Operation not permitted', 63],
};

function ioError(e) {
  if (e instanceof TypeError) return 'stream did not contain valid UTF-8';
  const code = e?.payload;
  if (code === undefined) return String(e);
  const known = ERRNO[code];
  return known ? `${known[0]} (os error ${known[1]})` : code;
}

export const shelf = {
  total(items, pick, unit) {
    let picked;
    switch (pick.tag) {
      case 'by-name':
        picked = items.filter((i) => i.name === pick.val);
        break;
      case 'by-index':
        picked = pick.val < items.length ? [items[pick.val]] : [];
        break;
      case 'everything':
        picked = items;
        break;
      default:
        throw new Error(`unknown pick ${pick.tag}`);
    }
    if (picked.length === 0) {
      throw 'nothing was picked';
    }
    const pieces = picked.reduce((sum, i) => sum + BigInt(i.count), 0n);
    return unit === 'dozens' ? pieces / 12n : pieces;
  },

  find(items, name) {
    return items.find((i) => i.name === name);
  },

  label(item, style) {
    let text = `${item.name} x${item.count}`;
    if (item.price !== undefined && item.price !== null) {
      text += ` at ${fixed2(item.price)}`;
    }
    if (item.tags.length > 0) {
      text += ` [${item.tags.join(', ')}]`;
    }
    if (style.upper) {
      text = text.toUpperCase();
    }
    if (style.reversed) {
      text = [...text].reverse().join('');
    }
    return text;
  },

  restock(item, more) {
    return { ...item, count: Math.min(item.count + more, 0xffff_ffff) };
  },

  swap([n, c], flag) {
    return [c, n, !flag];
  },
};

// `x` with two decimals as Rust's `{:.2}` writes it: from the exact value
// of the double, ties to even, no exponent, `-` for any negative (-0 too).
function fixed2(x) {
  if (!Number.isFinite(x)) {
    return Number.isNaN(x) ? 'NaN' : x > 0 ? 'inf' : '-inf';
  }
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & 0xf_ffff_ffff_ffffn;
  let exp;
  if (biased === 0) {
    exp = -1074;
  } else {
    mantissa |= 1n << 52n;
    exp = biased - 1075;
  }
  // |x| * 100 = mantissa * 2^exp * 100 = num / den, rounded half to even.
  let num = mantissa * 100n;
  let den = 1n;
  if (exp >= 0) {
    num <<= BigInt(exp);
  } else {
    den <<= BigInt(-exp);
  }
  let q = num / den;
  const twice = 2n * (num % den);
  if (twice > den || (twice === den && q % 2n === 1n)) {
    q += 1n;
  }
  const digits = q.toString().padStart(3, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}
