// Serial claims: take `amount` available serials of a base SERIALS product (no variants), oldest first, and set
// the product's stock to what is left, all or nothing. Must run in a transaction: the product row is locked
// (SELECT … FOR UPDATE) first, so concurrent claims on one product run one after another and never hand out a
// serial twice; any rejection throws and the transaction rolls back with nothing claimed.
import type { Transaction } from 'kysely';
import type { Database } from '../../../db/tables';
import * as products from '../../../db/queries/products';
import * as serials from '../../../db/queries/serials';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import type { Effects } from '../../platform/unit-of-work';
import { serialClaimView } from '../../views/serial';
import { warnOfLowStock } from './stock-warnings';

export const maxClaimAmount = 1000;

export type SerialClaimView = ReturnType<typeof serialClaimView>;

export async function claimSerials(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
  amount: number,
  /** Where a `product:stock_low` the claim causes is recorded (src/domain/catalog/stock-warnings.ts); the API passes it. */
  effects?: Effects,
): Promise<SerialClaimView> {
  if (!Number.isInteger(amount) || amount < 1 || amount > maxClaimAmount) {
    throw new ValidationError([{ field: 'amount', message: `must be an integer from 1 to ${maxClaimAmount}` }]);
  }
  const product = await products.productByIdForUpdate(trx, shopId, productId);
  if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
  if (product.type !== 'SERIALS') {
    throw new ApiError(
      'PRODUCT_NOT_SERIAL',
      `The product is a ${product.type} product; serials can be claimed only from a SERIALS product.`,
    );
  }
  const variants = (await products.variantsByProduct(trx, shopId, [product.id])).get(product.id) ?? [];
  if (variants.length > 0) {
    throw new ApiError(
      'PRODUCT_NOT_SERIAL',
      'The product has variants; serials can be claimed only from a SERIALS product without variants.',
    );
  }
  const available = await serials.availableSerialCount(trx, shopId, product.id);
  if (available < amount) {
    throw new ApiError(
      'OUT_OF_STOCK',
      `Only ${available} serial${available === 1 ? '' : 's'} available; ${amount} requested. Nothing was claimed.`,
    );
  }
  const taken = await serials.oldestAvailableSerials(trx, shopId, product.id, amount);
  const marked = await serials.markSerialsClaimed(
    trx,
    shopId,
    taken.map((s) => s.id),
  );
  // The product lock makes this impossible; if it ever happens, fail (and roll back) rather than hand out less.
  if (taken.length !== amount || marked !== amount)
    throw new Error(`serial claim raced: wanted ${amount}, got ${taken.length}/${marked}`);
  const remaining = available - amount;
  await products.setProductStock(trx, shopId, product.id, remaining);
  if (effects) await warnOfLowStock(trx, shopId, effects, [{ product: { id: product.id, stock: available } }]);
  return serialClaimView(taken, remaining);
}
