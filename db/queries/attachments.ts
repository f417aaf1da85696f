// Attachments: files a shop delivers to buyers.
import type { Selectable, Transaction } from 'kysely';
import type { Database } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export type AttachmentRow = Selectable<Database['attachments']>;
/** An attachment without its content (bytea), for checks and listings. */
export type AttachmentMeta = Omit<AttachmentRow, 'content'>;

export async function insertAttachment(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'attachments'>,
): Promise<AttachmentMeta> {
  return inShopForWrite(trx, shopId)
    .insertInto('attachments', row)
    .returning(['id', 'shop_id', 'filename', 'content_type', 'created_at'])
    .executeTakeFirstOrThrow();
}

/** The shop's attachments among `ids`, by id (ids of other shops, or of none, are absent). */
export async function attachmentsByIds(
  db: ReadDb,
  shopId: string,
  ids: readonly string[],
): Promise<Map<string, AttachmentMeta>> {
  if (ids.length === 0) return new Map();
  const rows = await inShop(db, shopId)
    .selectFrom('attachments')
    .select(['id', 'shop_id', 'filename', 'content_type', 'created_at'])
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}
