// The files a FILE product delivers (attachments of the same shop).
import type { Transaction } from 'kysely';
import type { Database } from '../tables';
import { inShopForWrite } from './shop-scope';

export async function addProductFiles(
  trx: Transaction<Database>,
  shopId: string,
  productId: string,
  attachmentIds: readonly string[],
): Promise<void> {
  if (attachmentIds.length === 0) return;
  await inShopForWrite(trx, shopId)
    .insertInto(
      'product_files',
      attachmentIds.map((attachment_id) => ({ product_id: productId, attachment_id })),
    )
    .execute();
}
