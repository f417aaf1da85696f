// The shop's payment gateways.
import type { Transaction } from 'kysely';
import type { Database, GatewayRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

/** The shop's gateway with this code (identifiers are upper case), active or not. */
export async function gatewayByCode(db: ReadDb, shopId: string, code: string): Promise<GatewayRow | undefined> {
  return inShop(db, shopId).selectFrom('gateways').selectAll().where('code', '=', code).executeTakeFirst();
}

/** The shop's active gateways, in the order they were added. */
export async function activeGateways(db: ReadDb, shopId: string): Promise<GatewayRow[]> {
  return inShop(db, shopId)
    .selectFrom('gateways')
    .selectAll()
    .where('active', '=', true)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Adds the gateway or replaces its kind, coins and active flag. */
export async function upsertGateway(
  trx: Transaction<Database>,
  shopId: string,
  row: ShopRow<'gateways'>,
): Promise<GatewayRow> {
  return inShopForWrite(trx, shopId)
    .insertInto('gateways', row)
    .onConflict((oc) =>
      oc.columns(['shop_id', 'code']).doUpdateSet({
        kind: row.kind,
        coins: row.coins ?? [],
        active: row.active ?? true,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** All of the shop's gateways, active or not, by code. */
export async function gatewaysOfShop(db: ReadDb, shopId: string): Promise<GatewayRow[]> {
  return inShop(db, shopId).selectFrom('gateways').selectAll().orderBy('code').execute();
}
