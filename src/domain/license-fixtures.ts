// The license part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): the product fields that make a
// license product (`license_activation_limit`, `license_duration_days`), and licenses imported as they stand (no
// origin order): a key (or a generated one), a product of the file, optionally a customer of the file, an expiry,
// a status and the devices already registered.
import type { Transaction } from 'kysely';
import * as licenses from '../../db/queries/licenses';
import type { Database } from '../../db/tables';
import { newId } from '../ids';
import { licenseKeyPattern, loadLicenseKeyring } from '../platform/license-keys';
import { licenseRow } from './licenses';

/** Product properties of the fixture schema. */
export const licenseProductFixtureProperties = {
  // Set: a license product; each unit of a completed order issues a key for this many devices.
  license_activation_limit: { type: 'integer', minimum: 1, maximum: 1000 },
  // Keys issued for it expire this many days after the order completes (omitted: never).
  license_duration_days: { type: 'integer', minimum: 1, maximum: 36500 },
} as const;

export const licenseProductFixtureDependencies = {
  license_duration_days: { required: ['license_activation_limit'] },
} as const;

export const licenseFixturesSchema = {
  type: 'array',
  maxItems: 10000,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['product'],
    properties: {
      // The title of a product of this file.
      product: { type: 'string', minLength: 1 },
      // Omitted: generated. Visible ASCII, no spaces.
      key: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[!-~]+$' },
      // The email of a customer of this file, or any email.
      customer_email: { type: 'string', format: 'email', maxLength: 254 },
      status: { enum: ['ACTIVE', 'REVOKED'] },
      activation_limit: { type: 'integer', minimum: 1, maximum: 1000 },
      expires_at: { type: 'string', format: 'date-time' },
      note: { type: 'string', maxLength: 1000 },
      // Devices already registered, in slot order (at most activation_limit).
      hwids: {
        type: 'array',
        maxItems: 1000,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 256 },
      },
    },
  },
} as const;

export interface LicenseProductFixture {
  license_activation_limit?: number;
  license_duration_days?: number;
}

export interface LicenseFixture {
  product: string;
  key?: string;
  customer_email?: string;
  status?: 'ACTIVE' | 'REVOKED';
  activation_limit?: number;
  expires_at?: string;
  note?: string;
  hwids?: string[];
}

/** The product columns of a product fixture. */
export function licenseColumns(p: LicenseProductFixture) {
  return {
    license_activation_limit: p.license_activation_limit ?? null,
    license_duration_days: p.license_duration_days ?? null,
  };
}

/** Rules across fields that the JSON Schema does not say. */
export function licenseFixtureProblems(f: {
  products?: ({ title: string } & LicenseProductFixture)[];
  licenses?: LicenseFixture[];
}): string[] {
  const problems: string[] = [];
  const byTitle = new Map<string, number>();
  for (const p of f.products ?? []) byTitle.set(p.title, (byTitle.get(p.title) ?? 0) + 1);
  const limits = new Map((f.products ?? []).map((p) => [p.title, p.license_activation_limit]));
  const keys = new Set<string>();
  (f.licenses ?? []).forEach((l, i) => {
    const n = byTitle.get(l.product) ?? 0;
    if (n === 0) problems.push(`/licenses/${i}/product names no product of this file`);
    else if (n > 1) problems.push(`/licenses/${i}/product names a title several products of this file have`);
    if (l.key !== undefined) {
      if (keys.has(l.key)) problems.push(`/licenses/${i}/key is used twice`);
      keys.add(l.key);
    }
    const limit = l.activation_limit ?? limits.get(l.product) ?? 1;
    if ((l.hwids?.length ?? 0) > limit)
      problems.push(`/licenses/${i}/hwids has more devices than the activation limit (${limit})`);
  });
  return problems;
}

/** Writes the licenses of a fixture file (in the caller's transaction); returns their ids. */
export async function seedLicenseFixtures(
  trx: Transaction<Database>,
  shopId: string,
  fixtures: LicenseFixture[],
  refs: {
    products: Map<string, { id: string; license_activation_limit: number | null }>;
    customersByEmail: Map<string, string>;
  },
  now: Date,
  fail: (message: string) => Error,
): Promise<string[]> {
  if (fixtures.length === 0) return [];
  const keyring = await loadLicenseKeyring(trx);
  const ids: string[] = [];
  for (const l of fixtures) {
    const product = refs.products.get(l.product)!;
    if (l.key !== undefined && !licenseKeyPattern.test(l.key)) throw fail(`/licenses/${ids.length}/key is malformed`);
    const email = l.customer_email?.toLowerCase() ?? null;
    const { row } = licenseRow(
      keyring,
      shopId,
      {
        product_id: product.id,
        order_id: null,
        order_item_id: null,
        customer_id: email === null ? null : (refs.customersByEmail.get(email) ?? null),
        customer_email: email,
        status: l.status ?? 'ACTIVE',
        activation_limit: l.activation_limit ?? product.license_activation_limit ?? 1,
        expires_at: l.expires_at ?? null,
        note: l.note ?? null,
        last_validated_at: null,
        created_at: now,
        updated_at: now,
      },
      l.key,
    );
    const [written] = await licenses.insertLicensesUnlessTaken(trx, shopId, [row]);
    if (!written) throw fail(`/licenses/${ids.length}/key: the shop already has a license with this key`);
    await licenses.insertDevices(
      trx,
      shopId,
      (l.hwids ?? []).map((hwid, i) => ({
        id: newId('ldv'),
        license_id: written.id,
        slot: i + 1,
        hwid,
        registered_at: now,
        last_validated_at: now,
      })),
    );
    ids.push(written.id);
  }
  return ids;
}
