// The audit trail of a shop: one row per state-changing request (src/platform/audit.ts writes them).
import type { Transaction } from 'kysely';
import type { Database } from '../tables';
import { executeBatch, shaped, type ShapedQuery } from './batch';
import { addRowValues, definedColumns, rowPlaceholders } from './prepared';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type AuditEntryPageRow = PageRow<'audit_entries'>;
export type NewAuditEntry = ShopRow<'audit_entries'>;

/** One keyset page of a shop's audit entries: `limit + 1` rows matching the keyset's filters, in its order. */
export const auditEntriesPage = pageOf('audit_entries');

/** Writes one entry in the given transaction (the write's own, or the one a refusal is recorded in). */
export async function insertAuditEntry(trx: Transaction<Database>, shopId: string, row: NewAuditEntry): Promise<void> {
  await executeBatch(trx, [{ steps: [{ name: 'new_audit_entry', query: auditEntryInsert(shopId, row) }] }]);
}

/** The insert of one entry, for a statement that writes more (a write's flush, db/queries/batch.ts). */
export function auditEntryInsert(shopId: string, row: NewAuditEntry): ShapedQuery {
  return shaped('audit_entries.insert', definedColumns(row), addRowValues({ $shop: shopId }, row), (db, p, columns) =>
    inShopForWrite(db as Transaction<Database>, p('$shop')).insertInto(
      'audit_entries',
      rowPlaceholders<NewAuditEntry>(p, columns),
    ),
  );
}

/** The names of the shop's credentials with these ids (a page's actors), by id. */
export async function credentialNames(
  db: ReadDb,
  shopId: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await inShop(db, shopId)
    .selectFrom('credentials')
    .select(['id', 'name'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.filter((r) => r.name !== null).map((r) => [r.id, r.name as string]));
}
