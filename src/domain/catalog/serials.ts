// Serial claims: take `amount` available serials of a base SERIALS product (no variants), oldest first, and set
// the product's stock to what is left, all or nothing. Must run in a transaction: the product row is locked
// (SELECT … FOR UPDATE) first, so concurrent claims on one product run one after another and never hand out a
// serial twice; any rejection throws and the transaction rolls back with nothing claimed.
import * as products from '../../../db/queries/products';
import * as serials from '../../../db/queries/serials';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { serialClaimView } from '../../views/serial';
import { warnOfLowStock } from './stock-warnings';

export const maxClaimAmount = 1000;

export type SerialClaimView = ReturnType<typeof serialClaimView>;

/** A claim that takes the product's stock across its warning level records `product:stock_low` in `w.effects`. */
export async function claimSerials(w: ShopWrite, productId: string, amount: number): Promise<SerialClaimView> {
  const { trx, shopId } = w;
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
  await warnOfLowStock(w, [{ product: { id: product.id, stock: available } }]);
  return serialClaimView(taken, remaining);
}
