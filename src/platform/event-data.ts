// What an event keeps of the object it describes. Events are stored for good (GET /events), sent to every endpoint
// subscribed to them and copied by receivers into their own logs, so no event holds a secret: a license key becomes
// a `key_hint` (the EventLicense schema), and an order's `license_keys` (on the order and its items) are left out.
// Every event passes through here on its way into the outbox (src/platform/events.ts writeEvent), whoever emits it:
// a rule of what the outbox may hold, so the writer applies it itself rather than trusting each caller to pass it in.
// db/migrations/0025_events_without_secrets.ts did the same to the events stored before.

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  !(JSON as { isRawJSON?(v: unknown): boolean }).isRawJSON?.(v);

/** Keys shorter than this get no hint: five characters of a short (merchant-chosen) key would give too much away. */
export const keyHintMinLength = 20;
const keyHintLength = 5;

/** The last 5 characters of a key (a generated key's last group), or null for a key too short to hint at. */
export function keyHint(key: string): string | null {
  return key.length >= keyHintMinLength ? key.slice(-keyHintLength) : null;
}

/** A License without its key: `key` becomes `key_hint`, in the same place. Already without one: unchanged. */
function licenseWithoutKey(license: Json): Json {
  if (!Object.hasOwn(license, 'key')) return license;
  const out: Json = {};
  for (const [name, value] of Object.entries(license)) {
    if (name === 'key') out.key_hint = typeof value === 'string' ? keyHint(value) : null;
    else out[name] = value;
  }
  return out;
}

function withoutLicenseKeys(record: Json): Json {
  if (!Object.hasOwn(record, 'license_keys')) return record;
  const { license_keys: _keys, ...rest } = record;
  return rest;
}

/** An Order without `license_keys`, on the order and on each item. */
function orderWithoutKeys(order: Json): Json {
  const out = withoutLicenseKeys(order);
  if (!Array.isArray(out.items)) return out;
  return { ...out, items: out.items.map((item: unknown) => (isRecord(item) ? withoutLicenseKeys(item) : item)) };
}

/** The data an event of this type keeps: the object as given, minus its secrets. */
export function eventData(type: string, data: unknown): unknown {
  if (!isRecord(data)) return data;
  if (type.startsWith('license:')) return licenseWithoutKey(data);
  if (type.startsWith('order:')) return orderWithoutKeys(data);
  return data;
}
