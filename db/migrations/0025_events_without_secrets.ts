// Events hold no secret (src/platform/event-data.ts): stored events of license:* held the license's key in clear, and
// order events (order:completed) held the order's `license_keys` with their keys. This rewrites them as events are
// written from now on: a license's `key` becomes `key_hint` (its last 5 characters, or null for a key under 20
// characters), and `license_keys` leave the order and its items. Webhook deliveries keep no copy of the body (the
// worker builds it from the event at each attempt), so every later attempt, and GET /events, sends the scrubbed data.
//
// The rules are written out here, not imported: a migration must do tomorrow what it did the day it shipped.
// Rows are rewritten in batches by id (keyset), each batch one UPDATE; the data's other bytes are kept as they
// were, amounts included (parsed keeping each number's source text, written back unchanged).
import { sql, type Kysely } from 'kysely';

type Json = Record<string, unknown>;

const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
const isRawJson = (v: unknown) => (JSON as unknown as { isRawJSON(v: unknown): boolean }).isRawJSON(v);
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v) && !isRawJson(v);

function parseExact(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? rawJson(context.source) : value,
  );
}

function licenseWithoutKey(license: Json): Json {
  if (!Object.hasOwn(license, 'key')) return license;
  const out: Json = {};
  for (const [name, value] of Object.entries(license)) {
    if (name === 'key') out.key_hint = typeof value === 'string' && value.length >= 20 ? value.slice(-5) : null;
    else out[name] = value;
  }
  return out;
}

function withoutLicenseKeys(record: Json): Json {
  if (!Object.hasOwn(record, 'license_keys')) return record;
  const { license_keys: _keys, ...rest } = record;
  return rest;
}

function orderWithoutKeys(order: Json): Json {
  const out = withoutLicenseKeys(order);
  if (!Array.isArray(out.items)) return out;
  return { ...out, items: out.items.map((item: unknown) => (isRecord(item) ? withoutLicenseKeys(item) : item)) };
}

/** The stored data text without secrets, or undefined when it holds none (the row is left alone). */
export function scrubbedEventData(type: string, text: string): string | undefined {
  const data = parseExact(text);
  if (!isRecord(data)) return undefined;
  const scrubbed = type.startsWith('license:') ? licenseWithoutKey(data) : orderWithoutKeys(data);
  if (scrubbed === data) return undefined;
  const out = JSON.stringify(scrubbed);
  return out === text ? undefined : out;
}

const batchSize = 500;

export async function up(db: Kysely<unknown>): Promise<void> {
  let after = '';
  for (;;) {
    // The LIKEs only narrow the scan; scrubbedEventData decides, on the parsed data.
    const { rows } = await sql<{ id: string; type: string; data: string }>`
      select id, type, data from events
      where id > ${after}
        and ((type like 'license:%' and data like '%"key"%')
          or (type like 'order:%' and data like '%"license_keys"%'))
      order by id
      limit ${batchSize}`.execute(db);
    if (rows.length === 0) return;
    after = rows[rows.length - 1]!.id;
    const changed = rows.flatMap((r) => {
      const data = scrubbedEventData(r.type, r.data);
      return data === undefined ? [] : [{ id: r.id, data }];
    });
    if (changed.length > 0) {
      await sql`update events set data = v.data
        from (select unnest(${changed.map((c) => c.id)}::text[]) as id,
                     unnest(${changed.map((c) => c.data)}::text[]) as data) as v
        where events.id = v.id`.execute(db);
    }
  }
}

// Nothing to restore: the keys are gone from events by design (each license still shows its own, GET /licenses/{id}).
export async function down(): Promise<void> {}
