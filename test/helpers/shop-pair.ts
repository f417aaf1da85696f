// The set-up nearly every suite starts from: shop A, the one under test, with a key of the scopes the suite tries,
// and shop B, another tenant with a full key, whose rows A must never see and which must never see A's. One place
// makes the pair, so every suite's tenancy checks start from the same two shops.
import type { TestApp } from './test-app';

type ShopInput = Parameters<TestApp['createShop']>[0];

export interface ShopPair {
  shopA: string;
  shopB: string;
  /** A key of shop A with `a.scopes` (all scopes when none are named). */
  keyA: string;
  /** A full-access key of shop B. */
  keyB: string;
}

export async function shopPair(
  t: TestApp,
  options: { a?: ShopInput & { scopes?: string[] }; b?: ShopInput } = {},
): Promise<ShopPair> {
  const { scopes = ['*'], ...a } = options.a ?? {};
  const shopA = await t.createShop({ name: 'Shop A', ...a });
  const shopB = await t.createShop({ name: 'Shop B', ...options.b });
  const keyA = (await t.createKey(shopA, scopes)).key;
  const keyB = (await t.createKey(shopB, ['*'])).key;
  return { shopA, shopB, keyA, keyB };
}
