// The shop both idempotency suites drive: a full-access key and one product, so that POST /products/{id}/duplicate
// (a write whose effect is a countable row) can be replayed, raced and crashed against.
import { countWhere } from './counts';
import type { TestApp } from './test-app';

export interface IdempotencyShop {
  shopId: string;
  key: string;
  credentialId: string;
  productId: string;
}

export async function shopWithProduct(t: TestApp): Promise<IdempotencyShop> {
  const shopId = await t.createShop({ plan: 'business' });
  const { id: credentialId, key } = await t.createKey(shopId, ['*']);
  const { products } = await t.seed(shopId, { products: [{ title: 'Widget', price: '1.00' }] });
  return { shopId, key, credentialId, productId: products[0]! };
}

/** How many products the shop has: one more per duplication that really ran. */
export const productCount = (t: TestApp, shopId: string) => countWhere(t.db, 'products', 'shop_id', shopId);

export const duplicateUrl = (productId: string) => `/dev/v1/products/${productId}/duplicate`;
