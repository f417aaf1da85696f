// The shop's blacklist: entries (EMAIL, EMAIL_DOMAIN, IP, COUNTRY) and the look-up of those matching a buyer.
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { BlacklistEntryRow, Database } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShopForWrite, type ShopRow } from './shop-scope';

export type BlacklistPageRow = PageRow<'blacklist_entries'>;

/** One keyset page of the shop's entries (newest first by default). */
export const blacklistPage = pageOf('blacklist_entries');

/** Inserts entries (values already normalised); an entry the shop already has is left as it is. */
export async function insertBlacklistEntries(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'blacklist_entries'>[],
): Promise<BlacklistEntryRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId)
    .insertInto('blacklist_entries', rows)
    .onConflict((oc) => oc.columns(['shop_id', 'type', 'value']).doNothing())
    .returningAll()
    .execute();
}

/**
 * Whether a row of `blacklist_entries` (its columns unqualified) matches a buyer: its email, the email's domain
 * (after the last `@`), its country, its IP address within the entry's network. The one definition of the rule in
 * SQL: given expressions, so a statement can match a buyer it is writing (src/domain/customers/buyers.ts).
 */
export function blacklistMatches(buyer: {
  email: RawBuilder<unknown>;
  country: RawBuilder<unknown>;
  ip: string | null;
}): RawBuilder<boolean> {
  const ip = buyer.ip === null ? sql`false` : sql`(type = 'IP' and network >>= ${buyer.ip}::inet)`;
  return sql<boolean>`((type = 'EMAIL' and value = (${buyer.email})::text)
    or (type = 'EMAIL_DOMAIN' and value = substring((${buyer.email})::text from '[^@]*$'))
    or (type = 'COUNTRY' and value = (${buyer.country})::text)
    or ${ip})`;
}
