// Email-marketing setting rows -> the EmailMarketingSetting object of the contract (ISO 8601 timestamps).
import type { EmailMarketingSettingRow } from '../../db/tables';

export function emailMarketingSettingView(row: EmailMarketingSettingRow) {
  return {
    id: row.id,
    provider: row.provider,
    enabled: row.enabled,
    list_id: row.list_id,
    double_opt_in: row.double_opt_in,
    sync_customers: row.sync_customers,
    last_synced_at: row.last_synced_at === null ? null : row.last_synced_at.toISOString(),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
