// Support tickets and their messages: a keyset page of the shop's tickets and the inserts of a new ticket with its
// messages (src/domain/support/tickets.ts).
import type { Transaction } from 'kysely';
import type { Database, TicketMessageRow, TicketRow } from '../tables';
import { pageOf, type PageRow } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type TicketPageRow = PageRow<'tickets'>;

/** One keyset page of the shop's tickets (most recent message first by default). */
export const ticketsPage = pageOf('tickets');

export async function insertTicket(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'tickets'>,
): Promise<TicketRow> {
  return inShopForWrite(trx, shopId).insertInto('tickets', row).returningAll().executeTakeFirstOrThrow();
}

export async function insertTicketMessages(
  trx: Transaction<Database>,
  shopId: string,
  rows: ShopRow<'ticket_messages'>[],
): Promise<TicketMessageRow[]> {
  if (rows.length === 0) return [];
  return inShopForWrite(trx, shopId).insertInto('ticket_messages', rows).returningAll().execute();
}

/** A ticket's messages, oldest first. */
export async function messagesOfTicket(db: ReadDb, shopId: string, ticketId: string): Promise<TicketMessageRow[]> {
  return inShop(db, shopId)
    .selectFrom('ticket_messages')
    .selectAll()
    .where('ticket_id', '=', ticketId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
