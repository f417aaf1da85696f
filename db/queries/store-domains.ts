// Additional storefront domains: the shop's list (keyset pages), one by id or hostname, and the moves of a
// verification (conditional updates, so a check that lost a race to another changes nothing).
import type { Transaction } from 'kysely';
import type { Database, StoreDomainCheckError, StoreDomainRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';
import { byIdOf, pageOf, type PageRow } from './shop-rows';

export type StoreDomainPageRow = PageRow<'store_domains'>;

/** `limit + 1` of the shop's domains for the keyset (newest first by default). */
export const storeDomainsPage = pageOf('store_domains');

export const storeDomainById: (db: ReadDb, shopId: string, id: string) => Promise<StoreDomainRow | undefined> =
  byIdOf('store_domains');

export async function storeDomainByName(
  db: ReadDb,
  shopId: string,
  domain: string,
): Promise<StoreDomainRow | undefined> {
  return inShop(db, shopId).selectFrom('store_domains').selectAll().where('domain', '=', domain).executeTakeFirst();
}

/**
 * Whether a shop other than `shopId` has this hostname VERIFIED. Only a yes/no crosses the shop boundary: a verified
 * hostname serves one shop, so no other shop may add or verify it (the partial unique index
 * store_domains_verified_domain_key is the guarantee under races; this is the plain answer before it).
 */
export async function domainVerifiedByAnotherShop(db: ReadDb, shopId: string, domain: string): Promise<boolean> {
  const row = await db
    .selectFrom('store_domains')
    .select('id')
    .where('domain', '=', domain)
    .where('status', '=', 'VERIFIED')
    .where('shop_id', '<>', shopId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertStoreDomain(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'store_domains'>,
): Promise<StoreDomainRow> {
  return inShopForWrite(trx, shopId).insertInto('store_domains', row).returningAll().executeTakeFirstOrThrow();
}

/** Removes the shop's FAILED row of a hostname (it is being added again); true when there was one. */
export async function deleteFailedStoreDomain(
  trx: Transaction<Database>,
  shopId: string,
  domain: string,
): Promise<boolean> {
  const rows = await inShopForWrite(trx, shopId)
    .deleteFrom('store_domains')
    .where('domain', '=', domain)
    .where('status', '=', 'FAILED')
    .returning('id')
    .execute();
  return rows.length > 0;
}

export type DomainCheckOutcome =
  | { status: 'VERIFIED' }
  | { status: 'FAILED'; error: StoreDomainCheckError }
  | { status: 'PENDING_VERIFICATION'; error: StoreDomainCheckError };

/**
 * Records a check's outcome on a domain that is still PENDING_VERIFICATION (and only then: undefined when another
 * request moved it first).
 */
export async function recordDomainCheck(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  outcome: DomainCheckOutcome,
  now: Date,
): Promise<StoreDomainRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('store_domains')
    .set({
      status: outcome.status,
      ssl_status: outcome.status === 'FAILED' ? 'FAILED' : 'PENDING',
      verified_at: outcome.status === 'VERIFIED' ? now : null,
      last_checked_at: now,
      last_check_error: outcome.status === 'VERIFIED' ? null : outcome.error,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('status', '=', 'PENDING_VERIFICATION')
    .returningAll()
    .executeTakeFirst();
}
