// License rules: creation, reads, updates (revoke, re-activate, expiry, activation limit, devices), deletion and
// validation. Keys are generated from crypto.randomBytes, looked up by keyed hash and shown from their sealed copy
// (src/platform/license-keys.ts); validation is one SQL statement (db/queries/licenses.ts).
import type { Kysely } from 'kysely';
import * as licenses from '../../../db/queries/licenses';
import { productById } from '../../../db/queries/products';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { Database, LicenseDeviceRow, LicenseRow } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import type { components } from '../../generated/api-types';
import { newId } from '../../ids';
import type { Clock } from '../../platform/clock';
import type { CursorList } from '../../platform/cursor-list';
import { generateLicenseKey, licenseKeyPattern, type LicenseKeyring } from '../../platform/license-keys';
import type { ListSpec } from '../../platform/list-query';
import { isRetryable, type ShopWrite } from '../../platform/unit-of-work';
import { licenseStatus, licenseView, type DeviceFields, type LicenseView } from '../../views/license';

export type CreateLicenseInput = components['schemas']['CreateLicenseRequest'];
export type UpdateLicenseInput = components['schemas']['UpdateLicenseRequest'];
export type ValidateLicenseInput = components['schemas']['ValidateLicenseRequest'];

/** What a license write needs beyond its ShopWrite (which brings the time). */
export interface LicenseWriteDeps {
  /** Loaded when a key must be hashed, sealed or opened (a read of no license never needs it). */
  keyring: () => Promise<LicenseKeyring>;
}

/** What a license read needs: the keyring, and the clock that decides what EXPIRED means. */
export interface LicenseDeps extends LicenseWriteDeps {
  clock: Clock;
}

const fromUnix = (seconds: number) => new Date(seconds * 1000);

/** A license row as the API shows it: its key opened, its devices. */
export async function licenseViews(
  db: ReadDb,
  shopId: string,
  rows: LicenseRow[],
  deps: LicenseDeps,
): Promise<LicenseView[]> {
  if (rows.length === 0) return [];
  const keyring = await deps.keyring();
  const devices = await licenses.devicesOfLicenses(
    db,
    shopId,
    rows.map((r) => r.id),
  );
  const now = deps.clock.now();
  return rows.map((r) => licenseView(r, keyring.open(r.key_sealed, shopId, r.id), devices.get(r.id) ?? [], now));
}

async function oneView(db: ReadDb, shopId: string, row: LicenseRow, deps: LicenseDeps): Promise<LicenseView> {
  return (await licenseViews(db, shopId, [row], deps))[0]!;
}

/** New license rows with fresh keys (or the given one), sealed to their ids; written by the caller. */
export function licenseRow(
  keyring: LicenseKeyring,
  shopId: string,
  fields: Omit<licenses.NewLicense, 'id' | 'key_hash' | 'key_sealed'>,
  key: string = generateLicenseKey(),
): { row: licenses.NewLicense; key: string } {
  const id = newId('lic');
  return {
    key,
    row: { ...fields, id, key_hash: keyring.hash(key), key_sealed: keyring.seal(key, shopId, id) },
  };
}

export async function createLicense(
  w: ShopWrite,
  input: CreateLicenseInput,
  deps: LicenseWriteDeps,
): Promise<LicenseView> {
  const { trx, shopId, effects, now } = w;
  if (input.key !== undefined && !licenseKeyPattern.test(input.key)) {
    throw new ValidationError([{ field: 'key', message: 'must be 1 to 256 visible ASCII characters (no spaces)' }]);
  }
  const product = await productById(trx, shopId, input.product_id);
  if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
  const keyring = await deps.keyring();
  const email = input.customer_email?.toLowerCase() ?? null;
  const customerId = email === null ? null : ((await licenses.customerIdByEmail(trx, shopId, email)) ?? null);
  const fields = {
    product_id: product.id,
    order_id: null,
    order_item_id: null,
    customer_id: customerId,
    customer_email: email,
    status: 'ACTIVE' as const,
    activation_limit: input.activation_limit ?? product.license_activation_limit ?? 1,
    expires_at: input.expires_at === undefined ? null : fromUnix(input.expires_at),
    note: input.note ?? null,
    last_validated_at: null,
    created_at: now,
    updated_at: now,
  };
  let made: LicenseRow | undefined;
  let key = '';
  // A generated key colliding with one of the shop's (125 random bits) is as good as impossible; a given key that
  // is taken is the caller's conflict.
  for (let attempt = 0; !made; attempt++) {
    const next = licenseRow(keyring, shopId, fields, input.key);
    [made] = await licenses.insertLicensesUnlessTaken(trx, shopId, [next.row]);
    key = next.key;
    if (!made && (input.key !== undefined || attempt >= 3))
      throw new ApiError('CONFLICT', 'A license with this key already exists in this shop.');
  }
  const devices =
    input.hwid === undefined
      ? []
      : await licenses.insertDevices(trx, shopId, [
          {
            id: newId('ldv'),
            license_id: made.id,
            slot: 1,
            hwid: input.hwid,
            registered_at: now,
            last_validated_at: now,
          },
        ]);
  const view = licenseView(made, key, devices, now);
  effects.emit('license:created', view);
  effects.audit({ action: 'licenses.create', resourceType: 'license', resourceId: made.id });
  return view;
}

export async function getLicense(db: ReadDb, shopId: string, id: string, deps: LicenseDeps): Promise<LicenseView> {
  const row = await licenses.licenseById(db, shopId, id);
  if (!row) throw new NotFoundError('LICENSE_NOT_FOUND');
  return oneView(db, shopId, row, deps);
}

export async function updateLicense(
  w: ShopWrite,
  id: string,
  input: UpdateLicenseInput,
  deps: LicenseWriteDeps,
): Promise<LicenseView> {
  const { trx, shopId, effects, now } = w;
  // Lock order: the devices, then the license (db/queries/licenses.ts).
  const devices = await licenses.devicesOfLicenseForUpdate(trx, shopId, id);
  const row = await licenses.licenseByIdForUpdate(trx, shopId, id);
  if (!row) throw new NotFoundError('LICENSE_NOT_FOUND');
  const limit = input.activation_limit ?? row.activation_limit;

  // The devices that stay: none after `hwid` (null releases every device; a value replaces them with that one),
  // minus the ones `release_devices` names.
  const released = new Set(input.release_devices ?? []);
  let kept: LicenseDeviceRow[] = input.hwid === undefined ? devices.filter((d) => !released.has(d.hwid)) : [];
  const added: licenses.NewLicenseDevice[] = [];
  if (typeof input.hwid === 'string') {
    added.push({
      id: newId('ldv'),
      license_id: id,
      slot: 1,
      hwid: input.hwid,
      registered_at: now,
      last_validated_at: now,
    });
  }
  if (kept.length + added.length > limit) {
    throw new ValidationError(
      [
        {
          field: 'activation_limit',
          message: `is below the ${kept.length} devices registered; release some (release_devices, or hwid: null) in the same request`,
        },
      ],
      'The activation limit would be below the number of registered devices.',
    );
  }
  // Devices keep their slots unless a slot is beyond the new limit: those move to the lowest free ones.
  const moved = kept.filter((d) => d.slot > limit);
  const keptIds = new Set(kept.map((d) => d.id));
  await licenses.deleteDevices(
    trx,
    shopId,
    id,
    devices.filter((d) => !keptIds.has(d.id) || d.slot > limit).map((d) => d.id),
  );
  if (moved.length > 0) {
    const taken = new Set(kept.filter((d) => d.slot <= limit).map((d) => d.slot));
    kept = kept.filter((d) => d.slot <= limit);
    let slot = 1;
    for (const d of moved) {
      while (taken.has(slot)) slot++;
      taken.add(slot);
      const { shop_id: _s, ...rest } = d;
      added.push({ ...rest, slot });
    }
  }
  const inserted = await licenses.insertDevices(trx, shopId, added);

  const updated = await licenses.updateLicenseRow(trx, shopId, id, {
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.expires_at !== undefined
      ? { expires_at: input.expires_at === null ? null : fromUnix(input.expires_at) }
      : {}),
    ...(input.note !== undefined ? { note: input.note } : {}),
    activation_limit: limit,
    updated_at: now,
  });
  const keyring = await deps.keyring();
  const view = licenseView(updated, keyring.open(updated.key_sealed, shopId, id), [...kept, ...inserted], now);
  if (row.status === 'ACTIVE' && updated.status === 'REVOKED') effects.emit('license:revoked', view);
  return view;
}

export async function deleteLicense(w: ShopWrite, id: string): Promise<void> {
  const { trx, shopId } = w;
  // Lock order: the devices, then the license (whose deletion removes them).
  await licenses.devicesOfLicenseForUpdate(trx, shopId, id);
  if (!(await licenses.deleteLicenseRow(trx, shopId, id))) throw new NotFoundError('LICENSE_NOT_FOUND');
}

// ---------------------------------------------------------------------------------------------------------------
// The list
// ---------------------------------------------------------------------------------------------------------------

export const licenseStatuses = ['ACTIVE', 'EXPIRED', 'REVOKED'] as const;

/** `GET /licenses` filters (query parameters of their own, bound into the cursor like any list's `filters`). */
export const licenseListSpec: ListSpec = {
  name: 'licenses',
  filters: {
    product_id: { column: 'product_id', type: 'id' },
    status: { column: 'status', type: 'enum', values: licenseStatuses, description: 'a license status' },
    customer_id: { column: 'customer_id', type: 'id' },
    customer_email: { column: 'customer_email', type: 'email', description: 'exact email (case-insensitive)' },
  },
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

/** The list of the shop's licenses as of `now` (which decides what EXPIRED means). */
export function licenseCursorList(deps: LicenseDeps): CursorList<licenses.LicensePageRow, LicenseView, undefined> {
  const now = deps.clock.now();
  return {
    spec: licenseListSpec,
    page: (db, shopId, keyset) => licenses.licensesPage(db, shopId, keyset, now),
    view: (rows, { db, shopId }) => licenseViews(db, shopId, rows, { ...deps, clock: { now: () => now } }),
  };
}

/** The list's query parameters as the `filters` text every cursor list parses (values are schema-checked ids, emails, enums). */
export function licenseFilters(query: {
  product_id?: string;
  status?: string;
  customer_id?: string;
  customer_email?: string;
}): string | undefined {
  const parts = (['product_id', 'status', 'customer_id', 'customer_email'] as const)
    .filter((name) => query[name] !== undefined)
    .map((name) => `${name}:${query[name]}`);
  return parts.length > 0 ? parts.join(',') : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------------------

export interface LicenseValidationView {
  valid: true;
  license: LicenseView;
}

const invalid = (message: string) => new ApiError('LICENSE_INVALID', message);

function deviceOf(json: licenses.DeviceJson | string): licenses.DeviceJson & DeviceFields {
  const d = (typeof json === 'string' ? JSON.parse(json) : json) as licenses.DeviceJson;
  return {
    ...d,
    registered_at: new Date(d.registered_at),
    last_validated_at: new Date(d.last_validated_at),
  } as unknown as licenses.DeviceJson & DeviceFields;
}

/**
 * Validates a key: one statement in the common case (db/queries/licenses.ts), on the pool or in a transaction. A
 * second one only when this statement saw a free device slot but lost it to a concurrent registration (then the
 * next look sees who took it), or on a deadlock. `audit`: the request's audit entry, written by the statement when
 * it accepts (see singleStatement in src/http/handler.ts).
 */
export async function validateLicense(
  db: Pick<Kysely<Database>, 'executeQuery'>,
  shopId: string,
  input: ValidateLicenseInput,
  deps: LicenseDeps,
  audit?: licenses.InlineAuditEntry,
): Promise<LicenseValidationView> {
  // Malformed: nothing to look up (the answer is the same as for an unknown key).
  if (!licenseKeyPattern.test(input.key)) throw invalid('The license key is malformed.');
  const keyring = await deps.keyring();
  const now = deps.clock.now();
  const lookup: licenses.ValidationInput = {
    shopId,
    keyHash: keyring.hash(input.key),
    productId: input.product_id ?? null,
    hwid: input.hwid ?? null,
    now,
    deviceId: newId('ldv'),
  };
  for (let attempt = 0; ; attempt++) {
    let row: licenses.ValidationRow;
    try {
      row = await licenses.validateLicenseByHash(db, lookup, audit);
    } catch (err) {
      // On the pool the statement stands alone and may simply run again; inside a transaction (the idempotent
      // path) the transaction is aborted, and the unit of work retries all of it.
      if (isRetryable(err) && attempt < 3 && !(db as { isTransaction?: boolean }).isTransaction) continue;
      throw err;
    }
    if (row.id === null || row.status === null) throw invalid('The license key is not valid.');
    if (row.status === 'REVOKED') throw invalid('The license key has been revoked.');
    if (input.product_id !== undefined && row.product_id !== input.product_id)
      throw invalid('The license key is not valid for this product.');
    if (licenseStatus({ status: row.status, expires_at: row.expires_at }, now) === 'EXPIRED')
      throw new ApiError('LICENSE_EXPIRED');
    if (row.touched_at === null) {
      // A device was named and could not be registered. If this statement saw a free slot, a concurrent
      // registration took it (or registered this very device) first: look again, in a fresh snapshot.
      if (row.free_slot !== null && attempt < 3) continue;
      throw new ApiError(
        'LICENSE_HWID_MISMATCH',
        `The license is registered to ${row.activation_limit === 1 ? 'another device' : `its ${row.activation_limit} devices`}; release one (PATCH /licenses/{id}) to move it.`,
      );
    }
    const before = (typeof row.devices === 'string' ? JSON.parse(row.devices) : row.devices) as licenses.DeviceJson[];
    const seen = row.seen === null ? undefined : deviceOf(row.seen);
    const registered = row.registered === null ? undefined : deviceOf(row.registered);
    const devices = [
      ...before.filter((d) => d.id !== seen?.id).map(deviceOf),
      ...(seen ? [seen] : []),
      ...(registered ? [registered] : []),
    ];
    const license = licenseView(
      {
        id: row.id,
        product_id: row.product_id!,
        order_id: row.order_id,
        customer_id: row.customer_id,
        customer_email: row.customer_email,
        status: row.status,
        activation_limit: row.activation_limit!,
        expires_at: row.expires_at,
        note: row.note,
        last_validated_at: row.touched_at,
        created_at: row.created_at!,
        updated_at: row.updated_at!,
      },
      input.key,
      devices,
      now,
    );
    return { valid: true, license };
  }
}
