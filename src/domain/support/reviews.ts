// Buyers' reviews. They are written on the storefront, which is outside this API: here the command line
// (`cli review create`) and fixtures create them, for a real COMPLETED order of the shop and one of that order's
// products, one review per product of an order; the API lists them (GET /reviews). A review carries the order's
// buyer; the merchant's reply is imported by fixtures (this API has no reply operation).
import * as orders from '../../../db/queries/orders';
import * as reviews from '../../../db/queries/reviews';
import { ApiError, NotFoundError, ValidationError, type ErrorDetail } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { reviewView, type ReviewView } from '../../views/review';

export const REVIEW_TEXT_MAX = 5000;

/** `GET /reviews`: newest first; filters on rating, product and order (documented on ReviewFilters). */
export const reviewListSpec: ListSpec = {
  name: 'reviews',
  filters: {
    rating: { column: 'rating', type: 'enum', values: ['1', '2', '3', '4', '5'], description: '1 to 5' },
    product_id: { column: 'product_id', type: 'id' },
    order_id: { column: 'order_id', type: 'id' },
  },
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const reviewCursorList: CursorList<reviews.ReviewPageRow, ReviewView> = {
  spec: reviewListSpec,
  page: reviews.reviewsPage,
  view: (rows) => rows.map(reviewView),
};

export interface NewReview {
  order_id: string;
  /** One of the order's products; may be left out when the order has one product (or none). */
  product_id?: string;
  rating: number;
  message?: string | null;
  /** The merchant's reply (fixtures). */
  reply?: string | null;
}

/** What is wrong with a review's own fields (before any look-up). */
export function reviewFieldProblems(input: Pick<NewReview, 'rating' | 'message' | 'reply'>): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!Number.isInteger(input.rating) || input.rating < 1 || input.rating > 5)
    problems.push({ field: 'rating', message: 'must be a whole number from 1 to 5' });
  for (const field of ['message', 'reply'] as const) {
    const text = input[field];
    if (text !== undefined && text !== null && (text.trim() === '' || text.length > REVIEW_TEXT_MAX))
      problems.push({ field, message: `must be 1 to ${REVIEW_TEXT_MAX} characters` });
  }
  return problems;
}

export async function createReview(w: ShopWrite, input: NewReview): Promise<ReviewView> {
  const { trx, shopId, effects, now } = w;
  const problems = reviewFieldProblems(input);
  if (problems.length > 0) throw new ValidationError(problems);
  // The order's lock: two reviews of one order's product are checked one after the other.
  const order = await orders.orderByIdForUpdate(trx, shopId, input.order_id);
  if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
  if (order.status !== 'COMPLETED')
    throw new ApiError(
      'ORDER_NOT_COMPLETED',
      `The order is ${order.status}; only a COMPLETED order (paid and not refunded or disputed) can be reviewed.`,
    );
  const items = (await orders.itemsOfOrders(trx, shopId, [order.id])).get(order.id) ?? [];
  const products = [...new Set(items.flatMap((i) => (i.product_id === null ? [] : [i.product_id])))];
  let productId: string | null;
  if (input.product_id !== undefined) {
    if (!products.includes(input.product_id))
      throw new NotFoundError('PRODUCT_NOT_FOUND', `The order has no line of product ${input.product_id}.`);
    productId = input.product_id;
  } else if (products.length > 1) {
    throw new ValidationError([
      { field: 'product_id', message: `is required: the order has several products (${products.join(', ')})` },
    ]);
  } else {
    productId = products[0] ?? null;
  }
  const existing = await reviews.reviewsOfOrder(trx, shopId, order.id);
  if (existing.some((r) => r.product_id === productId))
    throw new ApiError(
      'CONFLICT',
      productId === null ? 'The order is already reviewed.' : `The order's product ${productId} is already reviewed.`,
    );

  const reply = input.reply ?? null;
  const row = await reviews.insertReview(trx, shopId, {
    id: newId('rev'),
    order_id: order.id,
    product_id: productId,
    customer_id: order.customer_id,
    customer_email: order.customer_email,
    rating: input.rating,
    message: input.message ?? null,
    reply,
    replied_at: reply === null ? null : now,
    created_at: now,
    updated_at: now,
  });
  const view = reviewView(row);
  effects.emit('review:created', view);
  return view;
}
