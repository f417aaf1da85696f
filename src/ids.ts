// One id scheme for every resource: a short resource prefix and a UUID v7 (time-ordered, so ids sort by creation
// and index well). Public `uniqid` values are random UUID v4.
import { randomFillSync, randomUUID } from 'node:crypto';

export type IdPrefix =
  | 'shop'
  | 'key'
  | 'prod'
  | 'var'
  | 'ser'
  | 'cus'
  | 'wal'
  | 'ord'
  | 'gwe'
  | 'item'
  | 'pay'
  | 'evt'
  | 'whe'
  | 'whd'
  | 'whl'
  | 'eml'
  | 'aud'
  | 'req'
  | 'gw'
  | 'cpn'
  | 'att'
  | 'plk'
  | 'rfd'
  | 'bl'
  | 'dyn'
  | 'vfd'
  | 'vfo'
  | 'qdl'
  | 'add'
  | 'wtx'
  | 'aapp'
  | 'acm'
  | 'sub'
  | 'srn'
  | 'lic'
  | 'ldv'
  | 'dsp'
  | 'rev'
  | 'tkt'
  | 'tkm'
  | 'rsl'
  | 'tier'
  | 'rsp'
  // Themes (src/domain/themes/themes.ts): themes and their preview sessions.
  | 'thm'
  | 'pvs'
  // Store settings (src/domain/store/domains.ts): additional storefront domains.
  | 'dom'
  // Email marketing and messaging bots (src/domain/store/email-marketing.ts, messaging-bots.ts).
  | 'ems'
  | 'bot'
  | 'btu'
  // Email-marketing sync (src/domain/store/email-marketing-sync.ts): a customer's sync to one setting's list.
  | 'emsy'
  // Analytics reports (src/domain/analytics/reports.ts): reports and their generations.
  | 'rpt'
  | 'rgen'
  // OAuth 2.0 (src/auth/oauth-grants.ts): apps (clients), grants, codes, refresh tokens, access tokens.
  | 'app'
  | 'ogr'
  | 'ocd'
  | 'ort'
  | 'oat'
  // Shop owners and their consent-page sessions (src/auth/consent.ts, src/ops/owner-admin.ts).
  | 'own'
  | 'cs';

// Random bytes are drawn 4 KiB at a time: the uuid package asked the system for 16 bytes per id, and with the
// dashes it printed and a regex then removed, minting ids was ~5% of the CPU of a POST /orders (six ids each).
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function random(bytes: number): Buffer {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += bytes;
  return pool.subarray(poolAt - bytes, poolAt);
}

// RFC 9562 UUIDv7 with a 31-bit counter in rand_a and the top of rand_b (the uuid package's "method 1"): ids minted
// in the same millisecond by this process keep their order; a new millisecond starts the counter at random.
let lastMs = -1;
let seq = 0;

/** The 32 hex digits of a new UUIDv7: 48-bit milliseconds, version 7, the counter, variant 10, random bits. */
function uuidv7Hex(): string {
  // The id's time is when it was minted, not a business time: the injectable clock is not for this.
  const now = Date.now();
  const r = random(10);
  if (now > lastMs) {
    lastMs = now;
    seq = r.readUInt32BE(0) & 0x7fffffff;
  } else if ((seq = (seq + 1) | 0) === 0) lastMs++; // 2^32 ids in a millisecond: borrow the next one
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | ((seq >>> 28) & 0x0f);
  b[7] = (seq >>> 20) & 0xff;
  b[8] = 0x80 | ((seq >>> 14) & 0x3f);
  b[9] = (seq >>> 6) & 0xff;
  b[10] = ((seq << 2) & 0xff) | (r[4]! & 0x03);
  r.copy(b, 11, 5, 10);
  return b.toString('hex');
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${uuidv7Hex()}`;
}

export function newUniqid(): string {
  return randomUUID();
}

/** Every id newId(prefix) returns fits it: a path that holds anything else names no resource, without a look-up. */
export function idShape(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[0-9a-f]{32}$`);
}

/** A uniqid as PostgreSQL's uuid prints it (any case): the one spelling of a public address. */
export const uniqidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
