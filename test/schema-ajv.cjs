// Cases for test-schema-ajv: random JSON Schemas made of the keywords
// jptool checks (state.h, jpt_schema_check), each with values made to land
// on both sides of its keywords, and ajv's verdict on each (draft 7, the
// Ajv class ajv exports by default). One JSON line per case:
// {"schema": <JSON text>, "data": <JSON text>, "valid": true|false}.
// The schema's text writes some counts as decimals (2.0), which JSON.parse
// would read back as integers: ajv gets the same number.
//
// Usage: node schema-ajv.cjs NODE_MODULES SEED COUNT
'use strict';

const [modules, seedText, countText] = process.argv.slice(2);
const Ajv = require(require('path').join(modules, 'ajv'));

let seed = Number(seedText) >>> 0 || 1;
function random() {
  // xorshift32: the same cases on every run of a seed.
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 4294967296;
}
const int = (n) => Math.floor(random() * n);
const pick = (list) => list[int(list.length)];
const chance = (p) => random() < p;

// A number written as a decimal in the schema's text.
class Decimal {
  constructor(value) { this.value = value; }
}
const count = (n) => (chance(0.3) ? new Decimal(n) : n);

const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];
const KEYS = ['a', 'b', 'c', 'x1', 'x2', 'é', ''];
// ajv 8 skips an empty name in `required` and in dependencies' arrays
// ({"required": [""]} accepts {}), which JSON Schema does not: those name
// the others only.
const NAMES = KEYS.filter((k) => k !== '');
// Patterns PCRE2 and ECMA 262 (with the "u" flag) read alike.
const PATTERNS = ['^a', 'b$', '^[a-c]+$', '\\d', '^x\\d$', '^.{2}$', 'é', '^$', '[^a]', 'a|b',
  '^(ab)*$', '\\w+', '^\\u00e9'];
const STRINGS = ['', 'a', 'b', 'ab', 'abc', 'x1', 'x9', 'é', 'éé', '12', 'ba', 'a\u0000b',
  '😀', 'aaaa', ' ', 'abab'];
const NUMBERS = [0, 1, -1, 2, 3, 4, 5, 7, 10, 2.5, 0.5, -2.5, 1.5, 100, 6, 1.0000001];

function value(depth) {
  switch (depth > 2 ? int(5) : int(7)) {
    case 0: return null;
    case 1: return chance(0.5);
    case 2: return pick(NUMBERS);
    case 3:
    case 4: return pick(STRINGS);
    case 5: {
      const a = [];
      for (let n = int(5); n > 0; n--) a.push(value(depth + 1));
      if (chance(0.3) && a.length > 0) a.push(a[0]);
      return a;
    }
    default: {
      const o = {};
      for (let n = int(5); n > 0; n--) o[pick(KEYS)] = value(depth + 1);
      return o;
    }
  }
}

// A schema of `depth` levels at most; `defs` names the definitions a $ref
// may point to.
function schema(depth, defs) {
  if (depth > 3 || chance(0.08)) return chance(0.8);
  const s = {};
  const kinds = int(3) + 1;
  for (let k = 0; k < kinds; k++) keyword(s, depth, defs);
  return s;
}

function keyword(s, depth, defs) {
  const sub = () => schema(depth + 1, defs);
  switch (int(30)) {
    case 0: s.type = pick(TYPES); break;
    case 1: s.type = [pick(TYPES), pick(TYPES)].filter((t, i, a) => a.indexOf(t) === i); break;
    case 2: s.enum = [value(3), value(3), pick(STRINGS)]; break;
    case 3: s.const = value(2); break;
    case 4: s.multipleOf = pick([1, 2, 3, 0.5, 1.5, 2.5]); break;
    case 5: s[pick(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])] = pick(NUMBERS); break;
    case 6: s[pick(['minLength', 'maxLength'])] = count(int(4)); break;
    case 7: s.pattern = pick(PATTERNS); break;
    case 8: s.items = sub(); break;
    case 9: s.items = [sub(), sub()]; if (chance(0.6)) s.additionalItems = sub(); break;
    case 10: s[pick(['minItems', 'maxItems'])] = count(int(4)); break;
    case 11: s.uniqueItems = chance(0.8); break;
    case 12: s.contains = sub(); break;
    case 13: {
      s.properties = {};
      for (let n = int(3) + 1; n > 0; n--) s.properties[pick(KEYS)] = sub();
      break;
    }
    case 14: s.required = [pick(NAMES), pick(NAMES)].filter((t, i, a) => a.indexOf(t) === i); break;
    case 15: s.patternProperties = { [pick(PATTERNS)]: sub() }; break;
    case 16: s.additionalProperties = chance(0.5) ? chance(0.5) : sub(); break;
    case 17: s.dependencies = { [pick(KEYS)]: chance(0.5) ? [pick(NAMES)] : sub() }; break;
    case 18: s.propertyNames = chance(0.5) ? { pattern: pick(PATTERNS) } : { maxLength: count(int(3)) }; break;
    case 19: s[pick(['minProperties', 'maxProperties'])] = count(int(4)); break;
    case 20: s.if = sub(); if (chance(0.8)) s.then = sub(); if (chance(0.8)) s.else = sub(); break;
    case 21: s.allOf = [sub(), sub()]; break;
    case 22: s.anyOf = [sub(), sub()]; break;
    case 23: s.oneOf = [sub(), sub(), sub()]; break;
    case 24: s.not = sub(); break;
    case 25: if (defs.length > 0) s.$ref = '#/definitions/' + pick(defs); break;
    case 26: s.description = 'an annotation'; s.title = 'T'; s.default = value(2); break;
    case 27: s.format = pick(['email', 'date-time', 'uri']); break;
    case 28: s.properties = { a: { $ref: '#' } }; break;
    default: s.type = 'object'; s.properties = { a: sub(), b: sub() }; s.required = ['a']; break;
  }
}

function text(v) {
  if (v instanceof Decimal) return v.value.toFixed(1);
  if (Array.isArray(v)) return '[' + v.map(text).join(',') + ']';
  if (v !== null && typeof v === 'object')
    return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ':' + text(v[k])).join(',') + '}';
  return JSON.stringify(v);
}

// The values a schema names (const, enum) and objects of the names it
// gives properties: values that land on its keywords more often than
// random ones.
function collect(s, seen) {
  if (s === null || typeof s !== 'object') return;
  if ('const' in s) seen.push(s.const);
  if (Array.isArray(s.enum)) seen.push(...s.enum);
  if (s.properties && typeof s.properties === 'object') {
    const o = {};
    for (const k of Object.keys(s.properties)) if (chance(0.7)) o[k] = value(2);
    seen.push(o);
  }
  for (const k of Object.keys(s)) {
    const v = s[k];
    if (k === 'const' || k === 'enum' || k === 'default') continue;
    if (Array.isArray(v)) v.forEach((x) => collect(x, seen));
    else if (v !== null && typeof v === 'object') {
      collect(v, seen);
      for (const x of Object.values(v)) collect(x, seen);
    }
  }
}

function plain(v) {
  return JSON.parse(text(v));
}

const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: false });
const out = [];
for (let made = 0, n = Number(countText); made < n;) {
  const definitions = {};
  const defs = [];
  if (chance(0.3)) {
    definitions.d1 = schema(2, []);
    defs.push('d1');
  }
  const root = schema(0, defs);
  if (defs.length > 0 && typeof root === 'object') root.definitions = definitions;
  let validate;
  try {
    validate = ajv.compile(plain(root));
  } catch (e) {
    continue; // a schema ajv refuses to compile is not a case
  }
  const schemaText = text(root);
  const seen = [];
  collect(plain(root), seen);
  for (let i = 0; i < 8 && made < n; i++, made++) {
    const data = seen.length > 0 && chance(0.4) ? pick(seen) : value(0);
    out.push(JSON.stringify({ schema: schemaText, data: JSON.stringify(data), valid: validate(data) }));
  }
  ajv.removeSchema();
}
process.stdout.write(out.join('\n') + '\n');
