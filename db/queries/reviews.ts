// Buyers' reviews of their completed orders: a keyset page of the shop's reviews, the reviews of one order, and
// the insert of a new one (src/domain/support/reviews.ts).
import type { Transaction } from 'kysely';
import type { Database, ReviewRow } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type ReviewPageRow = PageRow<'reviews'>;

/** One keyset page of the shop's reviews (newest first by default). */
export const reviewsPage = pageOf('reviews');

/** The reviews of one order, oldest first. */
export async function reviewsOfOrder(db: ReadDb, shopId: string, orderId: string): Promise<ReviewRow[]> {
  return inShop(db, shopId)
    .selectFrom('reviews')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function insertReview(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'reviews'>,
): Promise<ReviewRow> {
  return inShopForWrite(trx, shopId).insertInto('reviews', row).returningAll().executeTakeFirstOrThrow();
}
