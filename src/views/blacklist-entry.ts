// Blacklist rows -> the BlacklistEntry object of the contract.
import type { BlacklistEntryRow } from '../../db/tables';
import { unixSeconds } from './time';

export function blacklistEntryView(row: BlacklistEntryRow) {
  return {
    id: row.id,
    type: row.type,
    value: row.value,
    note: row.note,
    created_at: unixSeconds(row.created_at),
  };
}
