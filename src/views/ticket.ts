// Ticket rows -> the Ticket object of the contract.
import type { TicketRow } from '../../db/tables';
import { unixSeconds } from './time';

export function ticketView(row: TicketRow) {
  return {
    id: row.id,
    subject: row.subject,
    customer_email: row.customer_email,
    order_id: row.order_id,
    status: row.status,
    priority: row.priority,
    message_count: row.message_count,
    last_message_at: unixSeconds(row.last_message_at),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type TicketView = ReturnType<typeof ticketView>;
