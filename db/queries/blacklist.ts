// The shop's blacklist: entries (EMAIL, EMAIL_DOMAIN, IP, COUNTRY) and the look-up of those matching a buyer.
import { sql, type Transaction } from 'kysely';
import type { BlacklistEntryRow, Database } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

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

/** What is known of a buyer: each part that is null is not compared. */
export interface BuyerFacts {
  /** Lower-cased. */
  email: string;
  /** Upper-cased ISO 3166-1 alpha-2. */
  country: string | null;
  /** A normalised IP address. */
  ip: string | null;
}

/** The shop's entries that match the buyer (oldest first): its email, its email's domain, its country, its IP. */
export async function blacklistEntriesMatching(
  db: ReadDb,
  shopId: string,
  buyer: BuyerFacts,
): Promise<BlacklistEntryRow[]> {
  const domain = buyer.email.slice(buyer.email.lastIndexOf('@') + 1);
  return inShop(db, shopId)
    .selectFrom('blacklist_entries')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('type', '=', 'EMAIL'), eb('value', '=', buyer.email)]),
        eb.and([eb('type', '=', 'EMAIL_DOMAIN'), eb('value', '=', domain)]),
        ...(buyer.country === null ? [] : [eb.and([eb('type', '=', 'COUNTRY'), eb('value', '=', buyer.country)])]),
        ...(buyer.ip === null
          ? []
          : [eb.and([eb('type', '=', 'IP'), sql<boolean>`${sql.ref('network')} >>= ${buyer.ip}::inet`])]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
