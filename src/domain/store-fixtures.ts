// The store-settings part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): the branding and the
// layout (any subset of their fields: the rest keep their current values, the defaults on a fresh shop) and
// additional domains as they stand (any status, no look-up). The same rules as the API hold (https image URLs,
// http(s) footer links, hostnames, one hostname per shop, a VERIFIED hostname in one shop only); any refusal rolls
// the whole seed back.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { ValidationError } from '../errors';
import { normaliseHostname, seedDomainFixtures, type DomainFixture } from './store-domains';
import {
  brandingProblems,
  layoutProblems,
  writeSettingsFixture,
  type BrandingInput,
  type LayoutInput,
} from './store-settings';

const colour = { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' };
const httpsUrl = { type: ['string', 'null'], pattern: '^https://', maxLength: 2048 };

/** Properties of the fixture schema. */
export const storeFixtureSchema = {
  store_branding: {
    type: 'object',
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 100 },
      logo_url: httpsUrl,
      favicon_url: httpsUrl,
      primary_color: colour,
      accent_color: colour,
      support_email: { type: ['string', 'null'], format: 'email', maxLength: 254 },
    },
  },
  store_layout: {
    type: 'object',
    additionalProperties: false,
    properties: {
      product_grid_columns: { type: 'integer', minimum: 1, maximum: 6 },
      show_search: { type: 'boolean' },
      show_categories: { type: 'boolean' },
      show_reviews: { type: 'boolean' },
      announcement: { type: ['string', 'null'], maxLength: 500 },
      footer_links: {
        type: 'array',
        maxItems: 20,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['url', 'label'],
          properties: {
            url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
            label: { type: 'string', minLength: 1, maxLength: 200 },
          },
        },
      },
    },
  },
  store_domains: {
    type: 'array',
    maxItems: 100,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['domain'],
      properties: {
        domain: { type: 'string', minLength: 1, maxLength: 253 },
        status: { enum: ['PENDING_VERIFICATION', 'VERIFIED', 'FAILED'] },
        created_at: { type: 'string', format: 'date-time' },
      },
    },
  },
} as const;

export interface StoreFixtures {
  store_branding?: Partial<BrandingInput>;
  store_layout?: Partial<LayoutInput>;
  store_domains?: DomainFixture[];
}

/** Rules across fields and items that the JSON Schema does not say. */
export function storeFixtureProblems(f: StoreFixtures): string[] {
  const problems: string[] = [];
  if (f.store_branding) {
    const b = f.store_branding;
    const probe: BrandingInput = {
      name: b.name ?? 'x',
      logo_url: b.logo_url ?? null,
      favicon_url: b.favicon_url ?? null,
      primary_color: '#000000',
      accent_color: '#000000',
      support_email: null,
    };
    for (const p of brandingProblems(probe)) problems.push(`/store_branding/${p.field} ${p.message}`);
  }
  if (f.store_layout?.footer_links) {
    const probe: LayoutInput = {
      product_grid_columns: 3,
      show_search: true,
      show_categories: true,
      show_reviews: true,
      announcement: null,
      footer_links: f.store_layout.footer_links,
    };
    for (const p of layoutProblems(probe))
      problems.push(`/store_layout/${p.field.replace(/\[(\d+)\]\./, '/$1/')} ${p.message}`);
  }
  const seen = new Map<string, number>();
  (f.store_domains ?? []).forEach((d, i) => {
    const normal = normaliseHostname(d.domain);
    if ('problem' in normal) {
      problems.push(`/store_domains/${i}/domain ${normal.problem}`);
      return;
    }
    if (seen.has(normal.domain))
      problems.push(`/store_domains/${i}/domain duplicates /store_domains/${seen.get(normal.domain)}/domain`);
    seen.set(normal.domain, i);
  });
  return problems;
}

/** Writes the branding, the layout, then the domains. */
export async function seedStoreFixtures(
  trx: Transaction<Database>,
  shopId: string,
  f: StoreFixtures,
  now: Date,
  fail: (message: string) => Error,
): Promise<{ storeDomains: string[] }> {
  if (f.store_branding || f.store_layout) {
    try {
      await writeSettingsFixture(trx, shopId, f.store_branding, f.store_layout, now);
    } catch (err) {
      if (err instanceof ValidationError) throw fail(`/store_branding or /store_layout: ${err.message}`);
      throw err;
    }
  }
  return { storeDomains: await seedDomainFixtures(trx, shopId, f.store_domains ?? [], now, fail) };
}
