// Review rows -> the Review object of the contract.
import type { ReviewRow } from '../../db/tables';
import { unixSeconds } from './time';

export function reviewView(row: ReviewRow) {
  return {
    id: row.id,
    order_id: row.order_id,
    product_id: row.product_id,
    customer_email: row.customer_email,
    rating: row.rating,
    message: row.message,
    reply: row.reply,
    replied_at: row.replied_at === null ? null : unixSeconds(row.replied_at),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type ReviewView = ReturnType<typeof reviewView>;
