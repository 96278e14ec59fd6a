// JSON Schemas for a tool's input and output, written in a few words, and
// the check that turns a call's arguments into a plain object with its
// defaults filled in. Pure JavaScript: no host import, so it also runs
// under node.

const OPTIONAL = Symbol('toolhost.optional');

/** Options as a description string or an object of JSON Schema keywords. */
function keywords(options) {
  if (options === undefined) return {};
  if (typeof options === 'string') return { description: options };
  return { ...options };
}

/**
 * A small schema builder. Every builder returns a plain JSON Schema object,
 * so a hand-written schema can be used wherever a built one can.
 *
 *   s.object({ path: s.string('The file'), limit: s.optional(s.integer({ minimum: 1 })) })
 */
export const s = {
  string: (options) => ({ type: 'string', ...keywords(options) }),
  integer: (options) => ({ type: 'integer', ...keywords(options) }),
  number: (options) => ({ type: 'number', ...keywords(options) }),
  boolean: (options) => ({ type: 'boolean', ...keywords(options) }),
  /** One of these strings. */
  enum: (values, options) => ({ type: 'string', enum: [...values], ...keywords(options) }),
  array: (items, options) => ({ type: 'array', items, ...keywords(options) }),
  /**
   * An object with these members. A member is required unless it is
   * wrapped in `s.optional` or has a `default`; other members are refused.
   */
  object: (properties, options) => {
    const required = Object.entries(properties)
      .filter(([, schema]) => !schema[OPTIONAL] && !('default' in schema))
      .map(([name]) => name);
    return {
      type: 'object',
      properties,
      ...(required.length ? { required } : {}),
      additionalProperties: false,
      ...keywords(options),
    };
  },
  /** The member may be left out (it is then `undefined`). */
  optional: (schema) => ({ ...schema, [OPTIONAL]: true }),
};

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function fits(type, value) {
  const got = typeOf(value);
  return got === type || (type === 'number' && got === 'integer');
}

/**
 * Check `value` against `schema` (type, properties, required, additional
 * members, enum, bounds, items) and fill in defaults. Returns the checked
 * value, or throws `Error` whose message names where and what is wrong.
 * The host has already validated the arguments against the full schema;
 * this gives the tool its defaults and its own clear errors.
 */
export function check(schema, value, at = '') {
  const where = at === '' ? 'the arguments' : `\`${at}\``;
  if (schema === true || schema === undefined) return value;
  if (schema === false) throw new Error(`${where} is not allowed here`);
  const types = schema.type === undefined ? [] : [schema.type].flat();
  if (types.length && !types.some((t) => fits(t, value))) {
    throw new Error(`${where} must be ${types.join(' or ')}, not ${typeOf(value)}`);
  }
  if (schema.enum && !schema.enum.some((v) => v === value)) {
    throw new Error(`${where} must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) throw new Error(`${where} must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) throw new Error(`${where} must be at most ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) throw new Error(`${where} must have at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && length > schema.maxLength) throw new Error(`${where} must have at most ${schema.maxLength} characters`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) throw new Error(`${where} must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) throw new Error(`${where} must have at most ${schema.maxItems} items`);
    return schema.items ? value.map((item, i) => check(schema.items, item, `${at}[${i}]`)) : value;
  }
  if (typeOf(value) === 'object' && schema.properties) {
    // Members are defined, not assigned: a member named `__proto__` stays a member.
    const out = {};
    const put = (name, v) => Object.defineProperty(out, name, { value: v, enumerable: true, writable: true, configurable: true });
    for (const [name, member] of Object.entries(value)) {
      const path = at === '' ? name : `${at}.${name}`;
      if (Object.hasOwn(schema.properties, name)) put(name, check(schema.properties[name], member, path));
      else if (schema.additionalProperties === false) {
        const known = Object.keys(schema.properties).map((k) => `\`${k}\``).join(', ');
        throw new Error(`\`${path}\` is not an argument of this tool; it takes ${known || 'none'}`);
      } else put(name, check(schema.additionalProperties, member, path));
    }
    for (const [name, member] of Object.entries(schema.properties)) {
      if (Object.hasOwn(out, name)) continue;
      if (member && typeof member === 'object' && Object.hasOwn(member, 'default')) put(name, JSON.parse(JSON.stringify(member.default)));
      else if ((schema.required ?? []).includes(name)) {
        throw new Error(`\`${at === '' ? name : `${at}.${name}`}\` is missing${member?.description ? `: ${member.description}` : ''}`);
      }
    }
    return out;
  }
  return value;
}
