// Claimed serial rows -> the Serial claim object of the contract (serial timestamps are ISO 8601).
import type { ClaimableSerialRow } from '../../db/queries/serials';

export function claimedSerialView(row: ClaimableSerialRow) {
  return {
    id: row.id,
    serial: row.serial,
    variant_id: row.variant_id,
    variant_title: row.variant_title,
    created_at: row.created_at.toISOString(),
  };
}

export function serialClaimView(serials: ClaimableSerialRow[], remainingStock: number) {
  return { claimed_count: serials.length, remaining_stock: remainingStock, serials: serials.map(claimedSerialView) };
}
