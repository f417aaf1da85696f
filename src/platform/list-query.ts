// Filters and sorts of cursor lists (`GET /customers`, `/orders`, `/invoices`): `filters=field:value,field2:value2`
// and `sorts=field` or `sorts=-field`. Each list declares its allow-list as data (a ListSpec): the fields, their
// value types, the column and comparison each filter means, which fields sort. Parsing turns the query text into a
// normalised ListQuery (typed values, filters in field order), which is what a cursor is bound to and what the
// keyset query builder (db/queries/keyset.ts) turns into SQL with bound parameters only.
import { ValidationError, type ErrorDetail } from '../errors';

export type FieldType =
  'string' | 'email' | 'id' | 'enum' | 'country' | 'currency' | 'integer' | 'decimal' | 'boolean' | 'timestamp';

/** How a sort value travels through a cursor (as text) and back into SQL. */
export type SortCast = 'text' | 'timestamptz' | 'numeric' | 'integer';

export interface FilterField {
  /** The column compared (trusted: comes from the spec, never from the request). */
  column: string;
  type: FieldType;
  /** `=` by default; `>=` / `<` make range filters such as `created_after`. */
  op?: '=' | '>=' | '<=' | '>' | '<';
  /** For `enum`. */
  values?: readonly string[];
  /** Human description for docs and messages. */
  description?: string;
}

export interface SortField {
  column: string;
  cast: SortCast;
}

export interface ListSpec {
  /** Bound into every cursor: a cursor of one list is never valid on another. */
  name: string;
  filters: Readonly<Record<string, FilterField>>;
  sorts: Readonly<Record<string, SortField>>;
  /** e.g. `-created_at`. */
  defaultSort: string;
  /** The tie-breaker column (unique). */
  idColumn?: string;
}

export type FilterValue = string | number | boolean;

export interface ParsedFilter {
  field: string;
  column: string;
  op: '=' | '>=' | '<=' | '>' | '<';
  value: FilterValue;
}

export interface ParsedSort {
  field: string;
  column: string;
  cast: SortCast;
  direction: 'asc' | 'desc';
}

export interface ListQuery {
  list: string;
  /** In field-name order: the same filters in any order give the same query (and accept the same cursor). */
  filters: ParsedFilter[];
  sort: ParsedSort;
  idColumn: string;
}

const emailPattern = /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/;
// PostgreSQL text cannot hold U+0000 (a database error, a 500), and an unpaired surrogate has no UTF-8 form (the
// driver would silently send U+FFFD, a filter on another value).
const unpairedSurrogate = /[\uD800-\uDFFF]/u;
const decimalPattern = /^-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,8})?$/;
const integerPattern = /^-?(0|[1-9][0-9]{0,15})$/;
// A time of day always carries its offset: a local time would mean whatever the database session's zone is.
const isoPattern =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(?:Z|([+-])(\d{2}):?(\d{2})))?$/;
/** The range every time in the contract is limited to (Unix seconds 0 to 4102444800). */
const firstTimeMs = 0;
const lastTimeMs = 4102444800000;
const timestampForms = 'must be an ISO 8601 date-time (e.g. 2026-11-22T03:10:00Z), a date, or Unix seconds';
const outOfRange = 'must be from 1970-01-01T00:00:00Z to 2100-01-01T00:00:00Z';

/** A value of the field's type, normalised; or a message saying what is wrong. */
export function parseValue(field: FilterField, raw: string): { value: FilterValue } | { error: string } {
  if (raw.includes('\u0000') || unpairedSurrogate.test(raw))
    return { error: 'must not contain U+0000 or unpaired surrogates' };
  switch (field.type) {
    case 'string':
      return raw.length > 0 && raw.length <= 256 ? { value: raw } : { error: 'must be 1 to 256 characters' };
    case 'id':
      return /^[A-Za-z0-9_-]{1,64}$/.test(raw) ? { value: raw } : { error: 'must be an id' };
    case 'email':
      return emailPattern.test(raw) && raw.length <= 254
        ? { value: raw.toLowerCase() }
        : { error: 'must be an email address' };
    case 'enum':
      return field.values?.includes(raw)
        ? { value: raw }
        : { error: `must be one of: ${(field.values ?? []).join(', ')}` };
    case 'country':
      return /^[A-Z]{2}$/.test(raw)
        ? { value: raw }
        : { error: 'must be an ISO 3166-1 alpha-2 country code (e.g. US)' };
    case 'currency':
      return /^[A-Z]{3}$/.test(raw) ? { value: raw } : { error: 'must be an ISO 4217 currency code (e.g. USD)' };
    case 'integer':
      if (!integerPattern.test(raw) || !Number.isSafeInteger(Number(raw))) return { error: 'must be an integer' };
      return { value: Number(raw) };
    case 'decimal':
      // Kept as exact text: the database compares it as numeric.
      if (!decimalPattern.test(raw)) return { error: 'must be a decimal number such as 10 or 19.99' };
      return {
        value: raw
          .replace(/(\.\d*?)0+$/, '$1')
          .replace(/\.$/, '')
          .replace(/^-0$/, '0'),
      };
    case 'boolean':
      if (raw === 'true') return { value: true };
      if (raw === 'false') return { value: false };
      return { error: 'must be true or false' };
    case 'timestamp':
      return parseTimestamp(raw);
  }
}

/**
 * A time as normalised UTC text with its microseconds (`2026-11-22T02:10:00.5Z`), so PostgreSQL reads exactly the
 * instant that was checked here and equal instants written differently bind a cursor alike. Date.parse is no
 * judge: it rolls 2026-02-30 over to 2 March and reads 24:00 as the next day, while PostgreSQL refuses the first.
 */
function parseTimestamp(raw: string): { value: string } | { error: string } {
  if (/^\d{1,11}$/.test(raw)) {
    const ms = Number(raw) * 1000;
    if (ms > lastTimeMs) return { error: outOfRange };
    return { value: new Date(ms).toISOString().replace('.000Z', 'Z') };
  }
  const m = isoPattern.exec(raw);
  if (!m) return { error: timestampForms };
  const part = (i: number) => Number(m[i] ?? 0);
  const [year, month, day, hour, minute, second] = [part(1), part(2), part(3), part(4), part(5), part(6)];
  const fraction = (m[7] ?? '').replace(/0+$/, '');
  const [offsetHours, offsetMinutes] = [part(9), part(10)];
  // 1969 and 2100 can still name an instant inside the range through their offset; the instant is checked below.
  if (year < 1969 || year > 2100) return { error: outOfRange };
  if (month < 1 || month > 12) return { error: `has a month (${m[2]}) outside 01 to 12` };
  if (hour > 23 || minute > 59 || second > 59) return { error: 'has a time of day outside 00:00:00 to 23:59:59' };
  if (offsetMinutes > 59 || offsetHours * 60 + offsetMinutes > 14 * 60)
    return { error: 'has a UTC offset beyond ±14:00' };
  const local = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls a day the month does not have into the next month; the round trip catches it.
  if (new Date(local).getUTCMonth() !== month - 1)
    return { error: `is not a real date: ${m[1]}-${m[2]} has no day ${m[3]}` };
  const ms = local - (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  if (ms < firstTimeMs || ms + (fraction ? 1 : 0) > lastTimeMs) return { error: outOfRange };
  return { value: `${new Date(ms).toISOString().slice(0, 19)}${fraction ? `.${fraction}` : ''}Z` };
}

/**
 * Parses and checks `filters` and `sorts` against the list's allow-list. Every problem is collected: one 422 lists
 * them all, each with `field` `filters` or `sorts`.
 */
export function parseListQuery(spec: ListSpec, input: { filters?: string; sorts?: string }): ListQuery {
  const details: ErrorDetail[] = [];
  const filters: ParsedFilter[] = [];
  const seen = new Set<string>();
  if (input.filters !== undefined) {
    if (input.filters === '')
      details.push({ field: 'query.filters', message: 'must not be empty; omit it for no filters' });
    else {
      for (const pair of input.filters.split(',')) {
        const colon = pair.indexOf(':');
        if (pair === '' || colon <= 0 || colon === pair.length - 1) {
          details.push({ field: 'query.filters', message: `"${pair}" is not a field:value pair` });
          continue;
        }
        const name = pair.slice(0, colon);
        const raw = pair.slice(colon + 1);
        const field = Object.hasOwn(spec.filters, name) ? spec.filters[name] : undefined;
        if (!field) {
          details.push({
            field: 'query.filters',
            message: `"${name}" cannot be filtered on; allowed: ${Object.keys(spec.filters).join(', ')}`,
          });
          continue;
        }
        if (seen.has(name)) {
          details.push({ field: 'query.filters', message: `"${name}" is given more than once` });
          continue;
        }
        seen.add(name);
        const parsed = parseValue(field, raw);
        if ('error' in parsed) details.push({ field: 'query.filters', message: `${name} ${parsed.error}` });
        else filters.push({ field: name, column: field.column, op: field.op ?? '=', value: parsed.value });
      }
    }
  }

  const sortText = input.sorts ?? spec.defaultSort;
  const descending = sortText.startsWith('-');
  const sortName = descending ? sortText.slice(1) : sortText;
  const sortField = Object.hasOwn(spec.sorts, sortName) ? spec.sorts[sortName] : undefined;
  if (!sortField) {
    details.push({
      field: 'query.sorts',
      message: `must be one of: ${Object.keys(spec.sorts)
        .flatMap((s) => [s, `-${s}`])
        .join(', ')}`,
    });
  }
  if (details.length > 0 || !sortField) throw new ValidationError(details);

  filters.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  return {
    list: spec.name,
    filters,
    sort: { field: sortName, column: sortField.column, cast: sortField.cast, direction: descending ? 'desc' : 'asc' },
    idColumn: spec.idColumn ?? 'id',
  };
}

/** What a cursor is bound to: the list, its normalised filters and its sort. */
export function listQueryBinding(q: ListQuery): Record<string, unknown> {
  return {
    list: q.list,
    filters: q.filters.map((f) => [f.field, f.value]),
    sorts: `${q.sort.direction === 'desc' ? '-' : ''}${q.sort.field}`,
  };
}
