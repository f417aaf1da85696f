// The reseller part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): tiers, the program, and
// resellers in any state, imported as they stand (no mail, no event: nothing happened, the shop is being set up).
// Tiers are written through createTier (the CLI's rules), so names are unique and percents in range; a tier marked
// `is_default` becomes the program's default tier (the program's `default_tier` may name the same tier, or is
// left out). Written in the order tiers, program, resellers. Any refusal rolls the whole seed back.
import type { Transaction } from 'kysely';
import * as resellerQueries from '../../db/queries/resellers';
import type { Database, EnrollmentMode, ResellerStatus } from '../../db/tables';
import { newId } from '../ids';
import { customerForEmail } from './customers';
import { createTier, writeProgram } from './resellers';

const percent = { type: 'string', pattern: '^(100(\\.0{1,2})?|[0-9]{1,2}(\\.[0-9]{1,2})?)$' };
const revenue = { type: 'string', pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,8})?$' };
const signedRevenue = { type: 'string', pattern: '^-?(0|[1-9][0-9]{0,11})(\\.[0-9]{1,8})?$' };
const tierName = { type: 'string', minLength: 1, maxLength: 100 };

/** Properties of the fixture schema. */
export const resellerFixtureSchema = {
  reseller_tiers: {
    type: 'array',
    maxItems: 100,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'discount_percent'],
      properties: {
        name: tierName,
        discount_percent: percent,
        auto_advance_revenue: { anyOf: [revenue, { type: 'null' }] },
        auto_advance_orders: { type: ['integer', 'null'], minimum: 0, maximum: 2147483647 },
        auto_advance_requires_both: { type: 'boolean' },
        sort_order: { type: 'integer', minimum: -2147483648, maximum: 2147483647 },
        is_default: { type: 'boolean' },
      },
    },
  },
  reseller_program: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      enrollment_mode: { enum: ['MANUAL', 'APPLICATION', 'OPEN'] },
      default_tier: tierName,
      application_message: { type: ['string', 'null'], maxLength: 2000 },
      require_application_note: { type: 'boolean' },
    },
  },
  resellers: {
    type: 'array',
    maxItems: 10000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'status'],
      properties: {
        email: { type: 'string', format: 'email', maxLength: 254 },
        status: { enum: ['INVITED', 'APPLIED', 'ACTIVE', 'SUSPENDED', 'REJECTED'] },
        // Default: the program's default tier.
        tier: tierName,
        application_note: { type: 'string', maxLength: 2000 },
        lifetime_revenue: signedRevenue,
        lifetime_orders: { type: 'integer', minimum: 0, maximum: 2147483647 },
      },
    },
  },
} as const;

export interface ResellerTierFixture {
  name: string;
  discount_percent: string;
  auto_advance_revenue?: string | null;
  auto_advance_orders?: number | null;
  auto_advance_requires_both?: boolean;
  sort_order?: number;
  is_default?: boolean;
}

export interface ResellerProgramFixture {
  enabled?: boolean;
  enrollment_mode?: EnrollmentMode;
  default_tier?: string;
  application_message?: string | null;
  require_application_note?: boolean;
}

export interface ResellerFixture {
  email: string;
  status: ResellerStatus;
  tier?: string;
  application_note?: string;
  lifetime_revenue?: string;
  lifetime_orders?: number;
}

export interface ResellerFixtures {
  reseller_tiers?: ResellerTierFixture[];
  reseller_program?: ResellerProgramFixture;
  resellers?: ResellerFixture[];
}

/** The default tier the file names (by `is_default` or the program's `default_tier`), if any. */
function defaultTierName(f: ResellerFixtures): string | undefined {
  return f.reseller_program?.default_tier ?? (f.reseller_tiers ?? []).find((t) => t.is_default === true)?.name;
}

/** Rules across fields and items that the JSON Schema does not say. */
export function resellerFixtureProblems(f: ResellerFixtures): string[] {
  const problems: string[] = [];
  const names = new Map<string, number>();
  (f.reseller_tiers ?? []).forEach((t, i) => {
    if (names.has(t.name))
      problems.push(`/reseller_tiers/${i}/name duplicates /reseller_tiers/${names.get(t.name)}/name`);
    names.set(t.name, i);
  });
  const defaults = (f.reseller_tiers ?? []).filter((t) => t.is_default === true);
  if (defaults.length > 1) problems.push('/reseller_tiers: at most one tier may be is_default');
  const program = f.reseller_program;
  if (program?.default_tier !== undefined) {
    if (!names.has(program.default_tier))
      problems.push('/reseller_program/default_tier names no tier of /reseller_tiers');
    if (defaults.length === 1 && defaults[0]!.name !== program.default_tier)
      problems.push('/reseller_program/default_tier differs from the tier marked is_default');
  }
  const defaultTier = defaultTierName(f);
  if (program?.enrollment_mode === 'OPEN' && defaultTier === undefined)
    problems.push('/reseller_program/enrollment_mode OPEN needs a default tier');
  const emails = new Map<string, number>();
  (f.resellers ?? []).forEach((r, i) => {
    const email = r.email.toLowerCase();
    if (emails.has(email)) problems.push(`/resellers/${i}/email duplicates /resellers/${emails.get(email)}/email`);
    emails.set(email, i);
    if (r.tier !== undefined && !names.has(r.tier))
      problems.push(`/resellers/${i}/tier names no tier of /reseller_tiers`);
    if (r.tier === undefined && defaultTier === undefined)
      problems.push(`/resellers/${i}/tier is required: the file names no default tier`);
  });
  return problems;
}

/** Writes tiers, program and resellers; returns the reseller ids (tiers by name). */
export async function seedResellerFixtures(
  trx: Transaction<Database>,
  shop: { id: string; currency: string },
  f: ResellerFixtures,
  now: Date,
  fail: (message: string) => Error,
): Promise<{ resellerTiers: string[]; resellers: string[] }> {
  const tierIds = new Map<string, string>();
  for (const t of f.reseller_tiers ?? []) {
    const tier = await createTier(
      trx,
      shop.id,
      {
        name: t.name,
        discountPercent: t.discount_percent,
        autoAdvanceRevenue: t.auto_advance_revenue ?? null,
        autoAdvanceOrders: t.auto_advance_orders ?? null,
        autoAdvanceRequiresBoth: t.auto_advance_requires_both ?? false,
        sortOrder: t.sort_order ?? 0,
        isDefault: t.is_default === true,
      },
      now,
    );
    tierIds.set(t.name, tier.id);
  }
  const p = f.reseller_program;
  if (p) {
    const changes: resellerQueries.ProgramChanges = {};
    if (p.enabled !== undefined) changes.enabled = p.enabled;
    if (p.enrollment_mode !== undefined) changes.enrollment_mode = p.enrollment_mode;
    if (p.application_message !== undefined) changes.application_message = p.application_message;
    if (p.require_application_note !== undefined) changes.require_application_note = p.require_application_note;
    if (p.default_tier !== undefined) changes.default_tier_id = tierIds.get(p.default_tier)!;
    await writeProgram(trx, shop.id, changes, now);
  }
  const defaultName = defaultTierName(f);
  const ids: string[] = [];
  for (const r of f.resellers ?? []) {
    const email = r.email.toLowerCase();
    const tierId = tierIds.get(r.tier ?? defaultName!)!;
    const { customer } = await customerForEmail(trx, shop, email);
    const enrolled = r.status === 'ACTIVE' || r.status === 'SUSPENDED';
    const row = await resellerQueries.insertResellerIfAbsent(trx, shop.id, {
      id: newId('rsl'),
      customer_id: customer.id,
      email,
      status: r.status,
      tier_id: tierId,
      application_note: r.application_note ?? null,
      lifetime_revenue: r.lifetime_revenue ?? '0',
      lifetime_orders: r.lifetime_orders ?? 0,
      approved_at: enrolled ? now : null,
      suspended_at: r.status === 'SUSPENDED' ? now : null,
      rejected_at: r.status === 'REJECTED' ? now : null,
      created_at: now,
      updated_at: now,
    });
    if (!row) throw fail(`the shop already has a reseller ${email}`);
    ids.push(row.id);
  }
  return { resellerTiers: [...tierIds.values()], resellers: ids };
}
