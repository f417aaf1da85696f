// Support tickets. Buyers open them on the storefront, which is outside this API: here the command line
// (`cli ticket create`) and fixtures create them, only for a real customer of the shop (found by email) and, when
// the ticket is about an order, only for an order of that customer; the API lists them (GET /tickets), the most
// recent message first. A ticket's messages are rows of their own; its `message_count` and `last_message_at` are
// written with them, in the same transaction.
import { customerByEmailForUpdate } from '../../../db/queries/customers';
import * as orders from '../../../db/queries/orders';
import * as tickets from '../../../db/queries/tickets';
import type { TicketPriority, TicketStatus } from '../../../db/tables';
import { NotFoundError, ValidationError, type ErrorDetail } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { ticketView, type TicketView } from '../../views/ticket';

export const ticketStatuses: readonly TicketStatus[] = ['OPEN', 'PENDING', 'CLOSED'];
export const ticketPriorities: readonly TicketPriority[] = ['LOW', 'NORMAL', 'HIGH'];
export const TICKET_SUBJECT_MAX = 200;
export const TICKET_MESSAGE_MAX = 5000;

/** `GET /tickets`: most recent message first; filters on status, priority and the buyer's email (TicketFilters). */
export const ticketListSpec: ListSpec = {
  name: 'tickets',
  filters: {
    status: { column: 'status', type: 'enum', values: ticketStatuses, description: 'a ticket status' },
    priority: { column: 'priority', type: 'enum', values: ticketPriorities, description: 'a ticket priority' },
    // Stored lower-cased; the filter value is lower-cased when parsed.
    customer_email: { column: 'customer_email', type: 'email', description: 'exact email (case-insensitive)' },
  },
  sorts: {
    last_message_at: { column: 'last_message_at', cast: 'timestamptz' },
    created_at: { column: 'created_at', cast: 'timestamptz' },
  },
  defaultSort: '-last_message_at',
};

export const ticketCursorList: CursorList<tickets.TicketPageRow, TicketView> = {
  spec: ticketListSpec,
  page: tickets.ticketsPage,
  view: (rows) => rows.map(ticketView),
};

export interface NewTicket {
  /** The buyer: a customer of the shop. */
  email: string;
  subject: string;
  /** The buyer's first message. */
  message: string;
  /** An order of that customer the ticket is about. */
  order_id?: string;
  priority?: string;
  /** Default OPEN (awaits the merchant); fixtures may import PENDING or CLOSED tickets. */
  status?: string;
}

/** What is wrong with a ticket's own fields (before any look-up). */
export function ticketFieldProblems(input: Omit<NewTicket, 'email' | 'order_id'>): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const subject = input.subject.trim();
  if (subject === '' || subject.length > TICKET_SUBJECT_MAX)
    problems.push({ field: 'subject', message: `must be 1 to ${TICKET_SUBJECT_MAX} characters` });
  if (input.message.trim() === '' || input.message.length > TICKET_MESSAGE_MAX)
    problems.push({ field: 'message', message: `must be 1 to ${TICKET_MESSAGE_MAX} characters` });
  if (input.priority !== undefined && !ticketPriorities.includes(input.priority as TicketPriority))
    problems.push({ field: 'priority', message: `must be one of ${ticketPriorities.join(', ')}` });
  if (input.status !== undefined && !ticketStatuses.includes(input.status as TicketStatus))
    problems.push({ field: 'status', message: `must be one of ${ticketStatuses.join(', ')}` });
  return problems;
}

export async function createTicket(w: ShopWrite, input: NewTicket): Promise<TicketView> {
  const { trx, shopId, effects, now } = w;
  const problems = ticketFieldProblems(input);
  if (problems.length > 0) throw new ValidationError(problems);
  const customer = await customerByEmailForUpdate(trx, shopId, input.email.trim().toLowerCase());
  if (!customer)
    throw new NotFoundError('CUSTOMER_NOT_FOUND', `No customer with the email ${input.email} in this shop.`);
  if (input.order_id !== undefined) {
    const order = await orders.orderById(trx, shopId, input.order_id);
    if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
    if (order.customer_id !== customer.id)
      throw new ValidationError([{ field: 'order_id', message: `is not an order of the customer ${customer.email}` }]);
  }
  const row = await tickets.insertTicket(trx, shopId, {
    id: newId('tkt'),
    customer_id: customer.id,
    customer_email: customer.email,
    order_id: input.order_id ?? null,
    subject: input.subject.trim(),
    status: (input.status ?? 'OPEN') as TicketStatus,
    priority: (input.priority ?? 'NORMAL') as TicketPriority,
    message_count: 1,
    last_message_at: now,
    created_at: now,
    updated_at: now,
  });
  await tickets.insertTicketMessages(trx, shopId, [
    { id: newId('tkm'), ticket_id: row.id, author: 'BUYER', body: input.message, created_at: now },
  ]);
  const view = ticketView(row);
  effects.emit('ticket:created', view);
  return view;
}
