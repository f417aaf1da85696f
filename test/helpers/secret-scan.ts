// Looks for secrets in everything a run left behind (log lines, spans, responses, database rows, program output).
// A secret rarely leaks whole and verbatim only: it is logged inside an Authorization header (base64 of
// "id:secret", at any byte offset), stored in a bytea column (hex), URL-encoded in a query string, or cut short
// ("sk_test_51Hx…" in an error message). So each secret is searched in each of those forms, and any run of 17 of its
// characters counts as a leak.
import { sql, type Kysely } from 'kysely';
import { publicTables } from './db-snapshot';

/** One place to search: what it is (shown when a secret is found there) and its text. */
export interface Haystack {
  where: string;
  text: string;
}

/** A searched form of a secret and the text that form has. */
interface Form {
  form: string;
  text: string;
}

/** Length of the parts searched for; a part starts every half of it, so any run of 2 * PART - 1 chars is found. */
const PART = 12;

/**
 * base64 of the secret as it reads inside a longer base64 text: the value may start at any of the 3 byte offsets of a
 * 3-byte group, and the characters that mix in a neighbour's bits (the first group unless aligned, the last group)
 * are left out.
 */
function base64Forms(value: string, encoding: 'base64' | 'base64url'): Form[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms: Form[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString(encoding);
    const start = offset === 0 ? 0 : 4;
    const stable = text.slice(start, Math.floor((offset + bytes.length) / 3) * 4);
    if (stable.length >= PART) forms.push({ form: `${encoding} (offset ${offset})`, text: stable });
  }
  return forms;
}

/** The value's distinctive part: a leading "sk_test_" or "whsec_" is shared by every key of its kind. */
function randomPart(value: string): { text: string; at: number } {
  const prefix = /^[a-z]+_(?:test_|live_)?/.exec(value)?.[0] ?? '';
  return { text: value.slice(prefix.length), at: prefix.length };
}

/** Every form of a secret searched for, the whole value first. */
export function secretForms(value: string): Form[] {
  const forms: Form[] = [{ form: 'verbatim', text: value }];
  const add = (form: string, text: string) => {
    if (!forms.some((f) => f.text === text)) forms.push({ form, text });
  };
  add('URL-encoded', encodeURIComponent(value));
  add('JSON-escaped', JSON.stringify(value).slice(1, -1));
  add('hex', Buffer.from(value, 'utf8').toString('hex'));
  for (const f of [...base64Forms(value, 'base64'), ...base64Forms(value, 'base64url')]) add(f.form, f.text);
  const random = randomPart(value);
  for (let i = 0; i + PART <= random.text.length; i += PART / 2) {
    add(`part [${random.at + i}, ${random.at + i + PART})`, random.text.slice(i, i + PART));
  }
  return forms;
}

/**
 * Where each secret (by name) was found, in any form: one line per secret and place, naming the first form found
 * there. Empty: none of them anywhere.
 */
export function findSecrets(secrets: Readonly<Record<string, string>>, haystacks: readonly Haystack[]): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    const forms = secretForms(value);
    for (const { where, text } of haystacks) {
      const hit = forms.find((f) => text.includes(f.text));
      if (hit) found.push(`${name} (${hit.form}) in ${where}`);
    }
  }
  return found;
}

/**
 * Every row of every table, as PostgreSQL renders it to JSON (bytea as \x hex), one haystack per table: what the
 * database holds, whatever table a future change adds.
 */
export async function databaseHaystacks(
  db: Kysely<any>, // any schema version
): Promise<{ haystacks: Haystack[]; rows: Record<string, number> }> {
  const haystacks: Haystack[] = [];
  const rows: Record<string, number> = {};
  for (const { table } of await publicTables(db)) {
    const r = await sql<{ row: string }>`select to_jsonb(t)::text as row from ${sql.table(table)} as t`.execute(db);
    rows[table] = r.rows.length;
    haystacks.push({ where: `table ${table}`, text: r.rows.map((x) => x.row).join('\n') });
  }
  return { haystacks, rows };
}
