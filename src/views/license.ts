// Licenses -> the contract's License and LicenseKeyRef. The key comes in clear from the caller (opened from
// `key_sealed`, or the key a validation was sent); the status EXPIRED is an ACTIVE license past `expires_at`.
import type { LicenseRow } from '../../db/tables';
import { unixSeconds } from './time';

export type LicenseStatus = 'ACTIVE' | 'EXPIRED' | 'REVOKED';

/** What a device view needs (a row, or the JSON the validation statement returns, already parsed). */
export interface DeviceFields {
  slot: number;
  hwid: string;
  registered_at: Date;
  last_validated_at: Date;
}

export type LicenseFields = Pick<
  LicenseRow,
  | 'id'
  | 'product_id'
  | 'order_id'
  | 'customer_id'
  | 'customer_email'
  | 'status'
  | 'activation_limit'
  | 'expires_at'
  | 'note'
  | 'last_validated_at'
  | 'created_at'
  | 'updated_at'
>;

export function licenseStatus(row: Pick<LicenseRow, 'status' | 'expires_at'>, now: Date): LicenseStatus {
  if (row.status === 'REVOKED') return 'REVOKED';
  return row.expires_at !== null && row.expires_at.getTime() <= now.getTime() ? 'EXPIRED' : 'ACTIVE';
}

export function licenseView(row: LicenseFields, key: string, devices: DeviceFields[], now: Date) {
  const ordered = [...devices].sort((a, b) => a.slot - b.slot);
  return {
    id: row.id,
    key,
    product_id: row.product_id,
    order_id: row.order_id,
    customer_id: row.customer_id,
    customer_email: row.customer_email,
    status: licenseStatus(row, now),
    // The device registered first still holding its place (the lowest slot): the one of a 1-device license.
    hwid: ordered[0]?.hwid ?? null,
    activation_limit: row.activation_limit,
    devices: ordered.map((d) => ({
      hwid: d.hwid,
      registered_at: unixSeconds(d.registered_at),
      last_validated_at: unixSeconds(d.last_validated_at),
    })),
    expires_at: row.expires_at === null ? null : unixSeconds(row.expires_at),
    note: row.note,
    last_validated_at: row.last_validated_at === null ? null : unixSeconds(row.last_validated_at),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type LicenseView = ReturnType<typeof licenseView>;

export function licenseKeyRef(
  row: Pick<LicenseRow, 'id' | 'product_id' | 'status' | 'expires_at'>,
  key: string,
  now: Date,
) {
  return {
    id: row.id,
    key,
    product_id: row.product_id,
    status: licenseStatus(row, now),
    expires_at: row.expires_at === null ? null : unixSeconds(row.expires_at),
  };
}

export type LicenseKeyRefView = ReturnType<typeof licenseKeyRef>;
