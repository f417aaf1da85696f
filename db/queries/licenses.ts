// Licenses and their registered devices (migration 0013). Lock order, everywhere: a license's device rows first,
// then the license row (validation updates a device, then the license, in one statement), so a validation and an
// update or delete of the same license never wait on each other in a cycle.
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database, LicenseDeviceRow, LicenseRow } from '../tables';
import type { NewAuditEntry } from './audit-entries';
import { applyKeyset, type Keyset } from './keyset';
import { prepare } from './prepared';
import type { PageRow } from './shop-rows';
import { byIdOf } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type LicensePageRow = PageRow<'licenses'>;
export type NewLicense = ShopRow<'licenses'>;
export type NewLicenseDevice = ShopRow<'license_devices'>;
export type LicenseStatusFilter = 'ACTIVE' | 'EXPIRED' | 'REVOKED';

export const licenseById = byIdOf('licenses');

export async function licenseByIdForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
): Promise<LicenseRow | undefined> {
  return inShop(trx, shopId).selectFrom('licenses').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * Inserts licenses; a row whose key (hash) the shop already has is skipped, so the caller learns which were taken
 * without an aborted transaction: the rows returned are the ones written.
 */
export async function insertLicensesUnlessTaken(
  trx: Transaction<Database>,
  shopId: string,
  rows: NewLicense[],
): Promise<LicenseRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId)
    .insertInto('licenses', rows)
    .onConflict((oc) => oc.columns(['shop_id', 'key_hash']).doNothing())
    .returningAll()
    .execute();
}

export async function updateLicenseRow(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  patch: Partial<Omit<NewLicense, 'id'>>,
): Promise<LicenseRow> {
  return inShopForWrite(trx, shopId)
    .updateTable('licenses')
    .set(patch)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteLicenseRow(trx: Transaction<Database>, shopId: string, id: string): Promise<boolean> {
  const rows = await inShopForWrite(trx, shopId).deleteFrom('licenses').where('id', '=', id).returning('id').execute();
  return rows.length > 0;
}

/** Locks the license's devices (in slot order: the lock order above) and returns them. */
export async function devicesOfLicenseForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  licenseId: string,
): Promise<LicenseDeviceRow[]> {
  return inShop(trx, shopId)
    .selectFrom('license_devices')
    .selectAll()
    .where('license_id', '=', licenseId)
    .orderBy('slot')
    .forUpdate()
    .execute();
}

// Runs on every license page and read: compiled once, the ids bound as one array.
const devicesOfLicenseIds = prepare(['shopId', 'licenseIds'], (db, shopId, licenseIds) =>
  inShop(db, shopId)
    .selectFrom('license_devices')
    .selectAll()
    .where('license_id', '=', sql<string>`any(${licenseIds})`)
    .orderBy('license_id')
    .orderBy('slot'),
) as (db: ReadDb, shopId: string, licenseIds: string[]) => Promise<LicenseDeviceRow[]>;

/** The devices of the given licenses, by license id, in slot order. */
export async function devicesOfLicenses(
  db: ReadDb,
  shopId: string,
  licenseIds: string[],
): Promise<Map<string, LicenseDeviceRow[]>> {
  const byLicense = new Map<string, LicenseDeviceRow[]>();
  if (licenseIds.length === 0) return byLicense;
  for (const row of await devicesOfLicenseIds(db, shopId, licenseIds)) {
    const list = byLicense.get(row.license_id);
    if (list) list.push(row);
    else byLicense.set(row.license_id, [row]);
  }
  return byLicense;
}

export async function deleteDevices(
  trx: Transaction<Database>,
  shopId: string,
  licenseId: string,
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  await inShopForWrite(trx, shopId)
    .deleteFrom('license_devices')
    .where('license_id', '=', licenseId)
    .where('id', 'in', ids)
    .execute();
}

export async function insertDevices(
  trx: Transaction<Database>,
  shopId: string,
  rows: NewLicenseDevice[],
): Promise<LicenseDeviceRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId).insertInto('license_devices', rows).returningAll().execute();
}

/** The licenses issued for the given orders, oldest first. */
export async function licensesOfOrders(db: ReadDb, shopId: string, orderIds: string[]): Promise<LicenseRow[]> {
  if (orderIds.length === 0) return [];
  return inShop(db, shopId)
    .selectFrom('licenses')
    .selectAll()
    .where('order_id', 'in', orderIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Revokes the order's ACTIVE licenses; returns the ones it revoked. */
export async function revokeActiveLicensesOfOrder(
  trx: Transaction<Database>,
  shopId: string,
  orderId: string,
  now: Date,
): Promise<LicenseRow[]> {
  return inShopForWrite(trx, shopId)
    .updateTable('licenses')
    .set({ status: 'REVOKED', updated_at: now })
    .where('order_id', '=', orderId)
    .where('status', '=', 'ACTIVE')
    .returningAll()
    .execute();
}

/** The id of the shop's customer with this (lower-cased) email, if any. */
export async function customerIdByEmail(db: ReadDb, shopId: string, email: string): Promise<string | undefined> {
  const row = await inShop(db, shopId)
    .selectFrom('customers')
    .select('id')
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();
  return row?.id;
}

/**
 * One keyset page of the shop's licenses. The `status` filter is not a column comparison (EXPIRED is an ACTIVE
 * license past its expiry, as of `now`), so it is taken out of the keyset and written here; the other filters
 * (product_id, customer_id, customer_email) are plain columns.
 */
export async function licensesPage(db: ReadDb, shopId: string, keyset: Keyset, now: Date): Promise<LicensePageRow[]> {
  const status = keyset.filters.find((f) => f.column === 'status')?.value as LicenseStatusFilter | undefined;
  let query = inShop(db, shopId).selectFrom('licenses').selectAll();
  if (status === 'REVOKED') query = query.where('status', '=', 'REVOKED');
  else if (status === 'ACTIVE')
    query = query
      .where('status', '=', 'ACTIVE')
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  else if (status === 'EXPIRED')
    query = query.where('status', '=', 'ACTIVE').where('expires_at', 'is not', null).where('expires_at', '<=', now);
  const rest: Keyset = { ...keyset, filters: keyset.filters.filter((f) => f.column !== 'status') };
  return (await applyKeyset(query, rest).execute()) as LicensePageRow[];
}

// ---------------------------------------------------------------------------------------------------------------
// Validation: one statement.
// ---------------------------------------------------------------------------------------------------------------

/** A device as the validation statement returns it (JSON: timestamps as ISO text). */
export interface DeviceJson {
  id: string;
  slot: number;
  hwid: string;
  registered_at: string;
  last_validated_at: string;
}

export interface ValidationRow {
  /** null: no license with this key in this shop. */
  id: string | null;
  product_id: string | null;
  order_id: string | null;
  customer_id: string | null;
  customer_email: string | null;
  status: 'ACTIVE' | 'REVOKED' | null;
  activation_limit: number | null;
  expires_at: Date | null;
  note: string | null;
  last_validated_at: Date | null;
  created_at: Date | null;
  updated_at: Date | null;
  /** Set when the validation was accepted: the new last_validated_at. */
  touched_at: Date | null;
  /** The device that matched `hwid` (its last_validated_at updated). */
  seen: DeviceJson | string | null;
  /** The device this validation registered. */
  registered: DeviceJson | string | null;
  /** The slot that was free as this statement saw it (null: none was, or no registration was tried). */
  free_slot: number | null;
  /** The license's devices before this statement (JSON array). */
  devices: DeviceJson[] | string;
}

export interface ValidationInput {
  shopId: string;
  keyHash: Buffer;
  productId: string | null;
  hwid: string | null;
  now: Date;
  /** The id a device registered by this validation gets. */
  deviceId: string;
}

/** The audit entry an accepted validation writes in the same statement (src/platform/audit.ts makes it). */
export type InlineAuditEntry = NewAuditEntry;

// Every table is reached with `shop_id = $1` (the scan in test/platform/tenancy.test.ts reads Kysely calls only, so this
// statement keeps to the rule by hand). Steps, each a CTE of the one statement:
//   lic    the license with this key hash in this shop (the unique index licenses_shop_key_hash_key);
//   ok     it, when ACTIVE, of the product asked for (if any) and not expired at $5;
//   seen   the device with this hwid, if registered: its last_validated_at is stamped;
//   cand   otherwise (a hwid given, not registered): the lowest free slot 1..activation_limit as this snapshot sees it;
//   reg    registers the device in that slot. A concurrent registration that took the slot (or the same hwid)
//          first makes the insert conflict and do nothing: of 20 racing first validations of a 1-device license
//          exactly one inserts; the others find no free slot, or a taken one, and are answered HWID_MISMATCH;
//   touch  the license's last_validated_at, when the validation is accepted;
//   audit  (the variant with an audit entry) the request's audit entry, when accepted.
const validationSteps = `
with lic as (
  select l.* from licenses l where l.shop_id = $1 and l.key_hash = $2
),
ok as (
  select lic.id, lic.activation_limit from lic
  where lic.status = 'ACTIVE'
    and ($3::text is null or lic.product_id = $3::text)
    and (lic.expires_at is null or lic.expires_at > $5::timestamptz)
),
seen as (
  update license_devices d set last_validated_at = $5::timestamptz
  from ok
  where d.shop_id = $1 and d.license_id = ok.id and d.hwid = $4::text
  returning d.id, d.slot, d.hwid, d.registered_at, d.last_validated_at
),
cand as (
  select ok.id,
    (select s.slot from generate_series(1, ok.activation_limit) as s(slot)
      where not exists (
        select 1 from license_devices d where d.shop_id = $1 and d.license_id = ok.id and d.slot = s.slot
      )
      order by s.slot limit 1) as slot
  from ok
  where $4::text is not null and not exists (select 1 from seen)
),
reg as (
  insert into license_devices (id, shop_id, license_id, slot, hwid, registered_at, last_validated_at)
  select $6::text, $1, cand.id, cand.slot, $4::text, $5::timestamptz, $5::timestamptz
  from cand where cand.slot is not null
  on conflict do nothing
  returning id, slot, hwid, registered_at, last_validated_at
),
touch as (
  update licenses l set last_validated_at = $5::timestamptz
  from ok
  where l.shop_id = $1 and l.id = ok.id
    and ($4::text is null or exists (select 1 from seen) or exists (select 1 from reg))
  returning l.last_validated_at
)`;

const validationResult = `
select lic.id, lic.product_id, lic.order_id, lic.customer_id, lic.customer_email, lic.status,
  lic.activation_limit, lic.expires_at, lic.note, lic.last_validated_at, lic.created_at, lic.updated_at,
  (select last_validated_at from touch) as touched_at,
  (select row_to_json(seen) from seen) as seen,
  (select row_to_json(reg) from reg) as registered,
  (select slot from cand) as free_slot,
  (select coalesce(json_agg(json_build_object('id', d.id, 'slot', d.slot, 'hwid', d.hwid,
      'registered_at', d.registered_at, 'last_validated_at', d.last_validated_at) order by d.slot), '[]'::json)
    from license_devices d where d.shop_id = $1 and d.license_id = lic.id) as devices
from (values (1)) as one (x) left join lic on true`;

export const validationSql = `${validationSteps}${validationResult}`;

export const validationWithAuditSql = `${validationSteps},
audit as (
  insert into audit_entries (id, shop_id, occurred_at, credential_id, credential_kind, operation_id, method, path,
    action, resource_type, resource_id, path_params, status, error_code, ip, user_agent, request_id)
  select $7::text, $1, now(), $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::text,
    coalesce($15::text, (select id from ok)), $16::jsonb, $17::integer, null, $18::text, $19::text, $20::text
  from touch
  returning id
)${validationResult}`;

export function validationParameters(input: ValidationInput): unknown[] {
  return [input.shopId, input.keyHash, input.productId, input.hwid, input.now, input.deviceId];
}

export function auditParameters(entry: InlineAuditEntry): unknown[] {
  return [
    entry.id,
    entry.credential_id ?? null,
    entry.credential_kind,
    entry.operation_id,
    entry.method,
    entry.path,
    entry.action,
    entry.resource_type ?? null,
    entry.resource_id ?? null,
    entry.path_params ?? '{}',
    entry.status,
    entry.ip ?? null,
    entry.user_agent ?? null,
    entry.request_id,
  ];
}

/**
 * Looks the key up, checks it, registers the device and stamps the validation: one statement, one round trip.
 * Runs on the pool (autocommit: the statement is atomic by itself) or in a transaction alike. With `audit`, the
 * accepted request's audit entry is written by the same statement.
 */
export async function validateLicenseByHash(
  db: Pick<Kysely<Database>, 'executeQuery'>,
  input: ValidationInput,
  audit?: InlineAuditEntry,
): Promise<ValidationRow> {
  const query = audit
    ? CompiledQuery.raw(validationWithAuditSql, [...validationParameters(input), ...auditParameters(audit)])
    : CompiledQuery.raw(validationSql, validationParameters(input));
  const { rows } = await db.executeQuery<ValidationRow>(query);
  return rows[0]!;
}

/** Records how many licenses an order item issued (order views look licenses up only where there are some). */
export async function setItemLicenseCount(
  trx: Transaction<Database>,
  shopId: string,
  itemId: string,
  count: number,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('order_items')
    .set({ license_count: count })
    .where('id', '=', itemId)
    .execute();
}
