// Coupons of a shop and the products each is limited to.
import { sql, type Transaction } from 'kysely';
import type { CouponRow, Database } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type CouponPageRow = PageRow<'coupons'>;

/** One keyset page of the shop's coupons (newest first by default). */
export const couponsPage = pageOf('coupons');

/** The products each of the given coupons is limited to, by coupon id (a coupon without limits is absent). */
export async function productIdsOfCoupons(
  db: ReadDb,
  shopId: string,
  couponIds: readonly string[],
): Promise<Map<string, string[]>> {
  const byCoupon = new Map<string, string[]>();
  if (couponIds.length === 0) return byCoupon;
  const rows = await inShop(db, shopId)
    .selectFrom('coupon_products')
    .select(['coupon_id', 'product_id'])
    .where('coupon_id', 'in', couponIds)
    .orderBy('coupon_id')
    .orderBy('product_id')
    .execute();
  for (const r of rows) {
    const list = byCoupon.get(r.coupon_id);
    if (list) list.push(r.product_id);
    else byCoupon.set(r.coupon_id, [r.product_id]);
  }
  return byCoupon;
}

/** The shop's coupon with this code; codes are stored lower-cased, so the lookup is case-insensitive. */
export async function couponByCode(db: ReadDb, shopId: string, code: string): Promise<CouponRow | undefined> {
  return inShop(db, shopId).selectFrom('coupons').selectAll().where('code', '=', code.toLowerCase()).executeTakeFirst();
}

/** The products the coupon is limited to; none means every product. */
export async function couponProductIds(db: ReadDb, shopId: string, couponId: string): Promise<string[]> {
  const rows = await inShop(db, shopId)
    .selectFrom('coupon_products')
    .select('product_id')
    .where('coupon_id', '=', couponId)
    .orderBy('product_id')
    .execute();
  return rows.map((r) => r.product_id);
}

/** Inserts the coupon and its product limits; `code` must already be lower-cased. */
export async function insertCoupon(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'coupons'>,
  productIds: readonly string[] = [],
): Promise<CouponRow> {
  const coupon = await inShopForWrite(trx, shopId).insertInto('coupons', row).returningAll().executeTakeFirstOrThrow();
  if (productIds.length > 0) {
    await inShopForWrite(trx, shopId)
      .insertInto(
        'coupon_products',
        [...new Set(productIds)].map((product_id) => ({ coupon_id: coupon.id, product_id })),
      )
      .execute();
  }
  return coupon;
}

/** The coupon with this code, locked: a pending order holds one of its uses, so uses are counted one at a time. */
export async function couponByCodeForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  code: string,
): Promise<CouponRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('coupons')
    .selectAll()
    .where('code', '=', code.toLowerCase())
    .forUpdate()
    .executeTakeFirst();
}

/** Takes (+1) or gives back (-1) one use of the coupon. */
export async function changeCouponUses(
  trx: Transaction<Database>,
  shopId: string,
  id: string,
  delta: 1 | -1,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('coupons')
    .set((eb) => ({ uses: sql<number>`${eb.ref('uses')} + ${delta}`, updated_at: now }))
    .where('id', '=', id)
    .execute();
}
