// Payment links: shareable hosted checkouts for a product (or one of its variants) or a fixed amount. The hosted
// page that turns a visit into an order is not here; this module creates and switches links.
import Decimal from 'decimal.js';
import {
  insertPaymentLink,
  togglePaymentLink as flipEnabled,
  variantOfProduct,
} from '../../../db/queries/payment-links';
import { productById } from '../../../db/queries/products';
import { NotFoundError, ValidationError } from '../../errors';
import { newId, newUniqid } from '../../ids';
import { parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import { paymentLinkView } from '../../views/payment';

export interface PaymentLinkDeps {
  checkoutBaseUrl: string;
}

export interface CreatePaymentLinkInput {
  title: string;
  product_id?: string;
  variant_id?: string;
  amount?: number;
  currency?: string;
  quantity?: number;
  max_uses?: number;
  expires_at?: number;
}

/** What the link sells: exactly one of a product and an amount (the contract cannot say "exactly one"). */
function checkShape(input: CreatePaymentLinkInput): void {
  const both = input.product_id !== undefined && input.amount !== undefined;
  const neither = input.product_id === undefined && input.amount === undefined;
  if (both || neither) {
    const message = both ? 'send either product_id or amount, not both' : 'send product_id or amount';
    throw new ValidationError([
      { field: 'product_id', message },
      { field: 'amount', message },
    ]);
  }
  if (input.variant_id !== undefined && input.product_id === undefined) {
    throw new ValidationError([{ field: 'variant_id', message: 'needs product_id' }]);
  }
}

export async function createPaymentLink(
  w: ShopWrite,
  shop: { currency: string },
  input: CreatePaymentLinkInput,
  deps: PaymentLinkDeps,
) {
  const { trx, shopId, now } = w;
  checkShape(input);
  if (input.expires_at !== undefined && input.expires_at * 1000 <= now.getTime()) {
    throw new ValidationError([{ field: 'expires_at', message: 'must be in the future' }]);
  }
  let currency: string;
  let amount: string | null = null;
  if (input.product_id !== undefined) {
    const product = await productById(trx, shopId, input.product_id);
    if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
    if (input.variant_id !== undefined && !(await variantOfProduct(trx, shopId, product.id, input.variant_id))) {
      throw new NotFoundError('VARIANT_NOT_FOUND', `The product ${product.id} has no variant ${input.variant_id}.`);
    }
    if (input.currency !== undefined && input.currency !== product.currency) {
      throw new ValidationError([
        { field: 'currency', message: `a product link sells in the product currency (${product.currency}); omit it` },
      ]);
    }
    currency = product.currency;
  } else {
    currency = input.currency ?? shop.currency;
    // The JSON number's shortest form is the digits sent for any amount the contract allows (see payments.ts).
    amount = parseAmount(new Decimal(String(input.amount)).toFixed(), 'amount', { currency, exclusiveMin: true });
  }
  const row = await insertPaymentLink(trx, shopId, {
    id: newId('plk'),
    uniqid: newUniqid(),
    title: input.title,
    product_id: input.product_id ?? null,
    variant_id: input.variant_id ?? null,
    amount,
    currency,
    quantity: input.quantity ?? 1,
    max_uses: input.max_uses ?? null,
    expires_at: input.expires_at === undefined ? null : new Date(input.expires_at * 1000),
    created_at: now,
    updated_at: now,
  });
  return paymentLinkView(row, deps.checkoutBaseUrl);
}

export async function togglePaymentLink(w: ShopWrite, id: string, deps: PaymentLinkDeps) {
  const row = await flipEnabled(w.trx, w.shopId, id, w.now);
  if (!row) throw new NotFoundError('PAYMENT_LINK_NOT_FOUND');
  return paymentLinkView(row, deps.checkoutBaseUrl);
}
