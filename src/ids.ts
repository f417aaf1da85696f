// One id scheme for every resource: a short resource prefix and a UUID v7 (time-ordered, so ids sort by creation
// and index well). Public `uniqid` values are random UUID v4.
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

export type IdPrefix =
  | 'shop'
  | 'key'
  | 'prod'
  | 'var'
  | 'ser'
  | 'cus'
  | 'wal'
  | 'ord'
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

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${uuidv7().replace(/-/g, '')}`;
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
