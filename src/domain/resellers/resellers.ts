// The reseller program: the program row (one per shop, read as a disabled MANUAL program until first written), the
// tiers (read-only through the API), the reseller list and one reseller, and the moves between reseller states.
//
// States (spec "States and transitions: Reseller", plus the moves it leaves open, decided here and documented in
// openapi.yaml and the command table of docs/cli.md):
//   (none) | REJECTED --invite (API)-------------------------> INVITED    program enabled, tier resolvable; mail + event
//   ACTIVE            --suspend (API)------------------------> SUSPENDED  suspended_at; event reseller:suspended
//   SUSPENDED         --reinstate (API)----------------------> ACTIVE     no event
//   INVITED           --accept (CLI `reseller accept`)-------> ACTIVE     approved_at
//   (none) | REJECTED --apply (CLI `reseller apply`)---------> APPLIED    program enabled and in APPLICATION mode
//                                                          -> ACTIVE     ... in OPEN mode (self-enrolment), approved_at
//   APPLIED           --approve (CLI `reseller approve`)-----> ACTIVE     approved_at
//   APPLIED | INVITED --reject (CLI `reseller reject`)-------> REJECTED   rejected_at
// A reseller row is never deleted: a REJECTED email invited (or applying) again moves the same row. Timestamps keep
// the time of the latest such move (a reinstated reseller keeps its suspended_at), so the history stays readable.
// Every move locks the reseller row first, so two moves of one reseller run one after the other and the second
// sees the first's status.
import * as resellers from '../../../db/queries/resellers';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { shopById } from '../../../db/queries/shops';
import type { EnrollmentMode, ResellerProgramRow, ResellerRow, ResellerStatus } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import { mailDraft } from '../../mail/templates';
import type { ShopWrite } from '../../platform/unit-of-work';
import { customerView } from '../../views/customer';
import {
  resellerProgramView,
  resellerTierView,
  resellerView,
  type ResellerProgramView,
  type ResellerView,
} from '../../views/reseller';
import { customerForEmail } from '../customers/customers';

// ---------------------------------------------------------------------------------------------------------------
// Program
// ---------------------------------------------------------------------------------------------------------------

/** The program id of a shop: fixed by the shop id, so the program a shop never wrote reads the same before and after. */
export function programIdOf(shopId: string): string {
  return `rsp_${shopId.replace(/^shop_/, '')}`;
}

/** The program of a shop that never wrote one: disabled, MANUAL, dated from the shop's creation. */
function defaultProgram(shopId: string, createdAt: Date): ResellerProgramRow {
  return {
    id: programIdOf(shopId),
    shop_id: shopId,
    enabled: false,
    enrollment_mode: 'MANUAL',
    application_message: null,
    require_application_note: false,
    default_tier_id: null,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

async function programRow(db: ReadDb, shopId: string): Promise<ResellerProgramRow> {
  const row = await resellers.programOfShop(db, shopId);
  if (row) return row;
  const createdAt = await resellers.shopCreatedAt(db, shopId);
  if (!createdAt) throw new Error(`shop ${shopId} vanished`);
  return defaultProgram(shopId, createdAt);
}

/** The program row, stored now if the shop had none, locked until the transaction ends. */
async function programForUpdate(w: ShopWrite): Promise<ResellerProgramRow> {
  const { trx, shopId } = w;
  const createdAt = await resellers.shopCreatedAt(trx, shopId);
  if (!createdAt) throw new Error(`shop ${shopId} vanished`);
  const { shop_id: _shop, ...fresh } = defaultProgram(shopId, createdAt);
  return resellers.programForUpdate(trx, shopId, fresh);
}

/** GET /reseller-program: never 404 (a shop without a row reads the default program). */
export async function getProgram(db: ReadDb, shopId: string): Promise<{ program: ResellerProgramView }> {
  return { program: resellerProgramView(await programRow(db, shopId)) };
}

export interface ProgramPatch {
  enabled?: boolean;
  enrollment_mode?: EnrollmentMode;
  application_message?: string | null;
  require_application_note?: boolean;
  default_tier_id?: string;
}

/**
 * PATCH /reseller-program: a partial update. An unknown `default_tier_id` is 404 RESELLER_TIER_NOT_FOUND; `OPEN`
 * without a default tier (sent or already stored) is 422 DEFAULT_TIER_REQUIRED. Both are checked before anything is
 * written, and the transaction rolls back on any refusal, so a refused patch changes nothing.
 */
export async function updateProgram(w: ShopWrite, patch: ProgramPatch): Promise<{ program: ResellerProgramView }> {
  const { trx, shopId, effects, now } = w;
  const current = await programForUpdate(w);
  if (patch.default_tier_id !== undefined && !(await resellers.tierById(trx, shopId, patch.default_tier_id)))
    throw new NotFoundError('RESELLER_TIER_NOT_FOUND', `The shop has no reseller tier ${patch.default_tier_id}.`);
  const mode = patch.enrollment_mode ?? current.enrollment_mode;
  const defaultTier = patch.default_tier_id ?? current.default_tier_id;
  if (mode === 'OPEN' && defaultTier === null)
    throw new ApiError(
      'DEFAULT_TIER_REQUIRED',
      'OPEN enrollment needs a default tier: send default_tier_id (none is stored).',
    );
  const changes: resellers.ProgramChanges = {};
  if (patch.enabled !== undefined) changes.enabled = patch.enabled;
  if (patch.enrollment_mode !== undefined) changes.enrollment_mode = patch.enrollment_mode;
  if (patch.application_message !== undefined) changes.application_message = patch.application_message;
  if (patch.require_application_note !== undefined) changes.require_application_note = patch.require_application_note;
  if (patch.default_tier_id !== undefined) changes.default_tier_id = patch.default_tier_id;
  const row = await resellers.updateProgram(trx, shopId, changes, now);
  effects.audit({
    action: 'reseller_program.updated',
    resourceType: 'reseller_program',
    resourceId: row.id,
    detail: { fields: Object.keys(changes).sort() },
  });
  return { program: resellerProgramView(row) };
}

/** Writes program fields (fixtures, `tier create --default`), storing the program row first if needed. */
export async function writeProgram(w: ShopWrite, changes: resellers.ProgramChanges): Promise<ResellerProgramRow> {
  const { trx, shopId, now } = w;
  await programForUpdate(w);
  return resellers.updateProgram(trx, shopId, changes, now);
}

// ---------------------------------------------------------------------------------------------------------------
// Tiers
// ---------------------------------------------------------------------------------------------------------------

/** GET /reseller-tiers: every tier by sort_order, each with its live member count (ACTIVE and SUSPENDED members). */
export async function listTiers(db: ReadDb, shopId: string) {
  const [tiers, program] = await Promise.all([
    resellers.tiersWithMemberCounts(db, shopId),
    resellers.programOfShop(db, shopId),
  ]);
  return { tiers: tiers.map((t) => resellerTierView(t, program?.default_tier_id ?? null)) };
}

export interface TierInput {
  name: string;
  /** Percent, 0 to 100, up to 2 decimals. */
  discountPercent: string;
  /** Decimal text >= 0, or null/absent: not part of the condition. */
  autoAdvanceRevenue?: string | null;
  autoAdvanceOrders?: number | null;
  autoAdvanceRequiresBoth?: boolean;
  sortOrder?: number;
  /** Make it the program's default tier. */
  isDefault?: boolean;
}

const percentPattern = /^(100(\.0{1,2})?|[0-9]{1,2}(\.[0-9]{1,2})?)$/;
const revenuePattern = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,8})?$/;

/** A tier (the CLI `reseller tier create` and fixtures: tiers are read-only through the API). */
export async function createTier(w: ShopWrite, input: TierInput) {
  const { trx, shopId, now } = w;
  const problems: { field: string; message: string }[] = [];
  if (input.name.length < 1 || input.name.length > 100)
    problems.push({ field: 'name', message: 'must be 1 to 100 characters' });
  if (!percentPattern.test(input.discountPercent))
    problems.push({ field: 'discount_percent', message: 'must be a percent from 0 to 100 with up to 2 decimals' });
  if (
    input.autoAdvanceRevenue !== undefined &&
    input.autoAdvanceRevenue !== null &&
    !revenuePattern.test(input.autoAdvanceRevenue)
  )
    problems.push({ field: 'auto_advance_revenue', message: 'must be a decimal string >= 0 with up to 8 decimals' });
  if (
    input.autoAdvanceOrders !== undefined &&
    input.autoAdvanceOrders !== null &&
    (!Number.isInteger(input.autoAdvanceOrders) || input.autoAdvanceOrders < 0 || input.autoAdvanceOrders > 2 ** 31 - 1)
  )
    problems.push({ field: 'auto_advance_orders', message: 'must be a whole number >= 0' });
  if (input.sortOrder !== undefined && (!Number.isInteger(input.sortOrder) || Math.abs(input.sortOrder) > 2 ** 31 - 1))
    problems.push({ field: 'sort_order', message: 'must be a whole number' });
  if (problems.length > 0)
    throw new ValidationError(problems, problems.map((p) => `${p.field} ${p.message}`).join('; '));
  if (await resellers.tierByName(trx, shopId, input.name))
    throw new ApiError('CONFLICT', `The shop already has a reseller tier named ${input.name}.`);
  const tier = await resellers.insertTier(trx, shopId, {
    id: newId('tier'),
    name: input.name,
    discount_percent: input.discountPercent,
    auto_advance_revenue: input.autoAdvanceRevenue ?? null,
    auto_advance_orders: input.autoAdvanceOrders ?? null,
    auto_advance_requires_both: input.autoAdvanceRequiresBoth ?? false,
    sort_order: input.sortOrder ?? 0,
    created_at: now,
    updated_at: now,
  });
  if (input.isDefault === true) await writeProgram(w, { default_tier_id: tier.id });
  return tier;
}

// ---------------------------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------------------------

export interface ResellerListQuery {
  status?: ResellerStatus;
  search?: string;
  page?: number;
  per_page?: number;
}

/** GET /resellers: newest first, page-number pagination (page >= 1, default 1; per_page 1-100, default 25). */
export async function listResellers(db: ReadDb, shopId: string, query: ResellerListQuery) {
  const page = query.page ?? 1;
  const perPage = query.per_page ?? 25;
  const filter: resellers.ResellerFilter = {
    status: query.status,
    search: query.search === undefined ? undefined : query.search.toLowerCase(),
  };
  const [rows, total] = await Promise.all([
    resellers.resellersPage(db, shopId, filter, { offset: (page - 1) * perPage, limit: perPage }),
    resellers.resellerCount(db, shopId, filter),
  ]);
  return { items: rows.map(resellerView), total, page, per_page: perPage };
}

/** GET /resellers/{id}: unknown or another shop's is 404 RESELLER_NOT_FOUND. */
export async function getReseller(db: ReadDb, shopId: string, id: string): Promise<{ reseller: ResellerView }> {
  const row = await resellers.resellerById(db, shopId, id);
  if (!row) throw new NotFoundError('RESELLER_NOT_FOUND');
  return { reseller: resellerView(row) };
}

async function viewOf(db: ReadDb, shopId: string, id: string): Promise<ResellerView> {
  const row = await resellers.resellerById(db, shopId, id);
  if (!row) throw new Error(`reseller ${id} vanished`);
  return resellerView(row);
}

// ---------------------------------------------------------------------------------------------------------------
// Invite
// ---------------------------------------------------------------------------------------------------------------

/** 409 CONFLICT unless the email has no live reseller row (none, or REJECTED). */
function refuseLive(row: ResellerRow | undefined): void {
  if (row && row.status !== 'REJECTED')
    throw new ApiError('CONFLICT', `This email is already a reseller of the shop (${row.status}).`);
}

/**
 * The reseller row of this email in its new state: a REJECTED row moves (never a second row), no row is inserted
 * with the shop's customer of that email (created when new). A concurrent insert of the same email makes this one
 * find that row: CONFLICT unless it is REJECTED.
 */
async function enrol(
  w: ShopWrite,
  shop: { currency: string },
  email: string,
  state: { status: ResellerStatus; tierId: string; note?: string | null; approvedAt?: Date },
): Promise<ResellerRow> {
  const { trx, shopId, effects, now } = w;
  const moveTo = (id: string) =>
    resellers.updateReseller(
      trx,
      shopId,
      id,
      {
        status: state.status,
        tier_id: state.tierId,
        ...(state.note !== undefined ? { application_note: state.note } : {}),
        ...(state.approvedAt !== undefined ? { approved_at: state.approvedAt } : {}),
      },
      now,
    );
  const existing = await resellers.resellerByEmailForUpdate(trx, shopId, email);
  refuseLive(existing);
  if (existing) return moveTo(existing.id);
  const { customer, created } = await customerForEmail(w, shop, email);
  const inserted = await resellers.insertResellerIfAbsent(trx, shopId, {
    id: newId('rsl'),
    customer_id: customer.id,
    email,
    status: state.status,
    tier_id: state.tierId,
    application_note: state.note ?? null,
    approved_at: state.approvedAt ?? null,
    created_at: now,
    updated_at: now,
  });
  if (inserted) {
    if (created) effects.emit('customer:created', customerView(customer, { referredCustomers: 0 }));
    return inserted;
  }
  // Another transaction inserted this email meanwhile (and has committed: the insert waited for it).
  const raced = await resellers.resellerByEmailForUpdate(trx, shopId, email);
  if (!raced) throw new Error(`reseller ${email} vanished between insert and read`);
  refuseLive(raced);
  return moveTo(raced.id);
}

/**
 * POST /resellers/invite. Checked in this order, each refusal changing nothing: the program is enabled (422
 * RESELLER_PROGRAM_DISABLED); the tier is `tier_id` (unknown: 404 RESELLER_TIER_NOT_FOUND) or else the program
 * default (neither: 422 RESELLER_TIER_REQUIRED); the email has no INVITED, APPLIED, ACTIVE or SUSPENDED row (409
 * CONFLICT). Then the reseller is INVITED (a REJECTED row moves back), the invitation mail is queued and
 * `reseller:invited` emitted, all in this transaction.
 */
export async function inviteReseller(
  w: ShopWrite,
  input: { email: string; tier_id?: string },
): Promise<Record<string, never>> {
  const { trx, shopId, effects } = w;
  const shop = await shopById(trx, shopId);
  if (!shop) throw new Error(`shop ${shopId} vanished`);
  const program = await programRow(trx, shopId);
  if (!program.enabled)
    throw new ApiError('RESELLER_PROGRAM_DISABLED', 'The reseller program is disabled: enable it before inviting.');
  const tierId = await resolveTier(trx, shopId, input.tier_id, program);
  const email = input.email.toLowerCase();
  const row = await enrol(w, shop, email, { status: 'INVITED', tierId });
  const view = await viewOf(trx, shopId, row.id);
  effects.mail(
    // No link: no page accepts invitations yet (the operator's `cli reseller accept` does), and a mail must not
    // send the invitee to an address that answers 404.
    mailDraft(email, 'reseller_invitation', { shopName: shop.name }),
  );
  effects.emit('reseller:invited', view);
  effects.audit({
    action: 'reseller.invited',
    resourceType: 'reseller',
    resourceId: row.id,
    detail: { tier_id: tierId },
  });
  return {};
}

async function resolveTier(
  db: ReadDb,
  shopId: string,
  tierId: string | undefined,
  program: ResellerProgramRow,
): Promise<string> {
  if (tierId !== undefined) {
    const tier = await resellers.tierById(db, shopId, tierId);
    if (!tier) throw new NotFoundError('RESELLER_TIER_NOT_FOUND', `The shop has no reseller tier ${tierId}.`);
    return tier.id;
  }
  if (program.default_tier_id === null)
    throw new ApiError(
      'RESELLER_TIER_REQUIRED',
      'Choose a tier for the reseller: send tier_id, or set the program default tier (PATCH /reseller-program).',
    );
  return program.default_tier_id;
}

// ---------------------------------------------------------------------------------------------------------------
// Moves of one reseller
// ---------------------------------------------------------------------------------------------------------------

async function lockedReseller(w: ShopWrite, id: string): Promise<ResellerRow> {
  const { trx, shopId } = w;
  const row = await resellers.resellerByIdForUpdate(trx, shopId, id);
  if (!row) throw new NotFoundError('RESELLER_NOT_FOUND');
  return row;
}

function requireStatus(row: ResellerRow, allowed: readonly ResellerStatus[], move: string): void {
  if (!allowed.includes(row.status))
    throw new ApiError(
      'RESELLER_INVALID_STATUS',
      `The reseller is ${row.status}; only ${allowed.join(' or ')} can be ${move}.`,
    );
}

/**
 * POST /resellers/{id}/suspend: only ACTIVE (else 422 RESELLER_INVALID_STATUS). Wholesale pricing stops at once: an
 * order created after the commit prices at full price (src/domain/resellers/reseller-orders.ts reads the status under a share
 * lock, so an order being priced concurrently finishes first). Resellers hold no credential of this API, so their
 * reseller-API access is their ACTIVE status itself, and it ends here. Emits `reseller:suspended` (the Reseller).
 */
export async function suspendReseller(w: ShopWrite, id: string): Promise<Record<string, never>> {
  const { trx, shopId, effects, now } = w;
  const row = await lockedReseller(w, id);
  requireStatus(row, ['ACTIVE'], 'suspended');
  await resellers.updateReseller(trx, shopId, id, { status: 'SUSPENDED', suspended_at: now }, now);
  effects.emit('reseller:suspended', await viewOf(trx, shopId, id));
  effects.audit({ action: 'reseller.suspended', resourceType: 'reseller', resourceId: id });
  return {};
}

/** POST /resellers/{id}/reinstate: only SUSPENDED (else 422), back to ACTIVE; no event (there is no reseller:reinstated). */
export async function reinstateReseller(w: ShopWrite, id: string): Promise<Record<string, never>> {
  const { trx, shopId, effects, now } = w;
  const row = await lockedReseller(w, id);
  requireStatus(row, ['SUSPENDED'], 'reinstated');
  await resellers.updateReseller(trx, shopId, id, { status: 'ACTIVE' }, now);
  effects.audit({ action: 'reseller.reinstated', resourceType: 'reseller', resourceId: id });
  return {};
}

/** `cli reseller accept`: the invited reseller accepts (INVITED -> ACTIVE, approved_at). */
export async function acceptInvitation(w: ShopWrite, id: string) {
  const { trx, shopId, now } = w;
  const row = await lockedReseller(w, id);
  requireStatus(row, ['INVITED'], 'accepted');
  await resellers.updateReseller(trx, shopId, id, { status: 'ACTIVE', approved_at: now }, now);
  return viewOf(trx, shopId, id);
}

/** `cli reseller approve`: the merchant approves an application (APPLIED -> ACTIVE, approved_at). */
export async function approveApplication(w: ShopWrite, id: string) {
  const { trx, shopId, now } = w;
  const row = await lockedReseller(w, id);
  requireStatus(row, ['APPLIED'], 'approved');
  await resellers.updateReseller(trx, shopId, id, { status: 'ACTIVE', approved_at: now }, now);
  return viewOf(trx, shopId, id);
}

/** `cli reseller reject`: an application is rejected, or an invitation declined (APPLIED | INVITED -> REJECTED). */
export async function rejectReseller(w: ShopWrite, id: string) {
  const { trx, shopId, now } = w;
  const row = await lockedReseller(w, id);
  requireStatus(row, ['APPLIED', 'INVITED'], 'rejected');
  await resellers.updateReseller(trx, shopId, id, { status: 'REJECTED', rejected_at: now }, now);
  return viewOf(trx, shopId, id);
}

/**
 * `cli reseller apply`: a customer email applies. The program must be enabled and not MANUAL (invite only): in
 * APPLICATION mode the row becomes APPLIED (the merchant approves or rejects), in OPEN mode ACTIVE at once
 * (self-enrolment, approved_at). The tier is the program default (RESELLER_TIER_REQUIRED without one); a note is
 * required when the program says so (max 2000 characters); a live row of the email is 409 CONFLICT, a REJECTED one
 * moves.
 */
export async function applyAsReseller(w: ShopWrite, input: { email: string; note?: string }): Promise<ResellerView> {
  const { trx, shopId, now } = w;
  const shop = await shopById(trx, shopId);
  if (!shop) throw new NotFoundError('NOT_FOUND', `No shop with id ${shopId}`);
  const program = await programRow(trx, shopId);
  if (!program.enabled)
    throw new ApiError('RESELLER_PROGRAM_DISABLED', 'The reseller program is disabled: nobody can apply.');
  if (program.enrollment_mode === 'MANUAL')
    throw new ValidationError(
      [{ field: 'enrollment_mode', message: 'is MANUAL: resellers are invited only' }],
      'The program is invite-only (MANUAL): nobody can apply.',
    );
  const note = input.note?.trim() === '' ? undefined : input.note;
  if (program.require_application_note && note === undefined)
    throw new ValidationError([{ field: 'note', message: 'is required by the program' }]);
  if (note !== undefined && note.length > 2000)
    throw new ValidationError([{ field: 'note', message: 'must be at most 2000 characters' }]);
  const tierId = await resolveTier(trx, shopId, undefined, program);
  const open = program.enrollment_mode === 'OPEN';
  const row = await enrol(w, shop, input.email.toLowerCase(), {
    status: open ? 'ACTIVE' : 'APPLIED',
    tierId,
    note: note ?? null,
    ...(open ? { approvedAt: now } : {}),
  });
  return viewOf(trx, shopId, row.id);
}

/** The reseller of this email (the CLI addresses resellers by email). */
export async function resellerIdByEmail(db: ReadDb, shopId: string, email: string): Promise<string> {
  const row = await resellers.resellerByEmail(db, shopId, email.toLowerCase());
  if (!row) throw new NotFoundError('RESELLER_NOT_FOUND', `The shop has no reseller ${email.toLowerCase()}.`);
  return row.id;
}
