// Ajv errors -> the `details` of a 422: `{ field, message }` with readable field paths such as
// `items[0].quantity`, `query.limit`, `path.id`, and a message written for a person ("must contain at least 1
// item"), never Ajv's own wording ("must NOT have fewer than 1 items"). Not HTTP's alone: the request validator
// (src/http/api.ts), the theme document and settings rules (src/domain/themes/bases.ts) and the fixture checker
// (src/ops/fixtures) word their problems here, so a message reads the same wherever a schema said no.
import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../errors';

/** A JSON pointer's segments, unescaped, with the child a keyword is about (a missing or unknown property). */
function segmentsOf(instancePath: string, child?: string): string[] {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts;
}

/** The request's segments as a field: `items[0].quantity`, `query.limit`, `header.x-request-id`, `body`. */
function fieldPath(parts: string[]): string {
  const [where, ...rest] = parts;
  let path = where === 'requestBody' ? '' : where === 'header' ? 'header' : (where ?? '');
  for (const p of rest) path += /^\d+$/.test(p) ? `[${p}]` : path ? `.${p}` : p;
  return path || 'body';
}

/** "1 item", "3 items". */
function count(n: unknown, noun: string): string {
  return `${String(n)} ${noun}${Number(n) === 1 ? '' : 's'}`;
}

const typeNames: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** Ajv's `type` param is one type or several joined by commas ("string,null"). */
function typeSentence(type: unknown): string {
  const names = String(type)
    .split(',')
    .map((t) => typeNames[t] ?? t);
  return `must be ${names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0]}`;
}

const formatSentences: Record<string, string> = {
  email: 'must be an email address',
  idn_email: 'must be an email address',
  uri: 'must be an absolute URL, such as https://example.com/path',
  'uri-reference': 'must be a URL or a relative reference',
  url: 'must be an absolute URL, such as https://example.com/path',
  'date-time': 'must be a date and time in RFC 3339 form, such as 2026-01-31T09:30:00Z',
  date: 'must be a date in the form YYYY-MM-DD',
  time: 'must be a time in the form HH:MM:SS with a time zone, such as 09:30:00Z',
  duration: 'must be an ISO 8601 duration, such as P1D',
  uuid: 'must be a UUID',
  ipv4: 'must be an IPv4 address',
  ipv6: 'must be an IPv6 address',
  hostname: 'must be a host name, such as shop.example.com',
  regex: 'must be a regular expression',
  int32: 'must be a whole number that fits in 32 bits',
  int64: 'must be a whole number that fits in 64 bits',
  byte: 'must be base64-encoded data',
};

const numberBounds: Record<string, string> = {
  minimum: 'must be at least',
  maximum: 'must be at most',
  exclusiveMinimum: 'must be greater than',
  exclusiveMaximum: 'must be less than',
  formatMinimum: 'must be no earlier than',
  formatMaximum: 'must be no later than',
  formatExclusiveMinimum: 'must be later than',
  formatExclusiveMaximum: 'must be earlier than',
};

interface Described {
  /** Where, as pointer segments: often a child of the object Ajv reports on. */
  parts: string[];
  message: string;
}

/** One Ajv error in words: where it is and the sentence. */
function describe(e: ErrorObject): Described {
  const p = e.params as Record<string, unknown>;
  const at = (message: string, child?: string): Described => ({ parts: segmentsOf(e.instancePath, child), message });
  switch (e.keyword) {
    case 'required':
      return at(
        p.missingProperty === 'requestBody' ? 'a request body is required' : 'is required',
        String(p.missingProperty),
      );
    case 'dependentRequired':
    case 'dependencies':
      return at(`is required when ${String(p.property)} is given`, String(p.missingProperty));
    case 'additionalProperties':
      return at('is not a known field', String(p.additionalProperty));
    case 'unevaluatedProperties':
      return at('is not a known field', String(p.unevaluatedProperty));
    case 'propertyNames':
      return at('is not an allowed field name', String(p.propertyName));
    case 'enum':
      return at(`must be one of: ${(p.allowedValues as unknown[]).join(', ')}`);
    case 'const':
      return at(`must be ${JSON.stringify(p.allowedValue)}`);
    case 'type':
      return at(typeSentence(p.type));
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'formatMinimum':
    case 'formatMaximum':
    case 'formatExclusiveMinimum':
    case 'formatExclusiveMaximum':
      return at(`${numberBounds[e.keyword]} ${String(p.limit)}`);
    case 'multipleOf':
      return at(`must be a multiple of ${String(p.multipleOf)}`);
    case 'minLength':
      return at(`must be at least ${count(p.limit, 'character')} long`);
    case 'maxLength':
      return at(`must be at most ${count(p.limit, 'character')} long`);
    case 'pattern':
      return at(`does not have the expected form (the pattern ${String(p.pattern)})`);
    case 'format':
      return at(formatSentences[String(p.format)] ?? `must be a valid ${String(p.format)}`);
    case 'minItems':
      return at(`must contain at least ${count(p.limit, 'item')}`);
    case 'maxItems':
    case 'items':
    case 'additionalItems':
    case 'unevaluatedItems':
      return at(`must contain at most ${count(p.limit, 'item')}`);
    case 'uniqueItems':
      return at(`must not contain the same item twice (items ${String(p.j)} and ${String(p.i)} are equal)`);
    case 'contains':
      return at(
        p.maxContains === undefined
          ? `must contain at least ${count(p.minContains, 'item')} of the expected kind`
          : `must contain between ${String(p.minContains)} and ${count(p.maxContains, 'item')} of the expected kind`,
      );
    case 'minProperties':
      return at(`must have at least ${count(p.limit, 'field')}`);
    case 'maxProperties':
      return at(`must have at most ${count(p.limit, 'field')}`);
    case 'discriminator':
      return at(
        p.error === 'tag' ? 'is required and must be a string' : 'is not one of the known types',
        String(p.tag),
      );
    case 'oneOf':
      return at('must match exactly one of the shapes this field allows');
    case 'anyOf':
      return at('must match one of the shapes this field allows');
    case 'not':
    case 'false schema':
      return at('is not allowed here');
    case 'if':
      return at('does not meet the rule that applies with the values of its other fields');
    // openapi-backend's own check of JSON text it could not parse; the parser's message would echo the input.
    case 'parse':
      return at('is not valid JSON');
    default:
      return at('is not valid');
  }
}

/** The contract's bound on `details` (ErrorObject.details maxItems): a body of 10 000 bad items lists the first. */
export const maxDetails = 1000;

export function validationDetails(errors: ErrorObject[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of errors) {
    if (details.length === maxDetails) break;
    const { parts, message } = describe(e);
    const detail = { field: fieldPath(parts), message };
    const key = `${detail.field}\u0000${detail.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      details.push(detail);
    }
  }
  return details;
}

/**
 * The same sentences for a document that is not a request (the fixture file of `cli seed`): one line per problem,
 * each led by its JSON pointer (`/products/0/title is required`, `/ must be an object`).
 */
export function schemaProblems(errors: ErrorObject[]): string[] {
  return errors.map((e) => {
    const { parts, message } = describe(e);
    const pointer = parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    return `/${pointer} ${message}`;
  });
}
