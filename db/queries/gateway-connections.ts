// A shop's connections to payment providers: sealed credentials (opened only by the code that calls the provider)
// and the settings that may be shown.
import type { Transaction } from 'kysely';
import type { Database, GatewayConnectionRow } from '../tables';
import { inShop, inShopForWrite, type ReadDb } from './shop-scope';

/** Connects the shop to the provider, or replaces the connection's credentials and settings. */
export async function upsertGatewayConnection(
  trx: Transaction<Database>,
  shopId: string,
  row: { gateway: string; sealed_credentials: Buffer; settings: Record<string, string>; now: Date },
): Promise<void> {
  const settings = JSON.stringify(row.settings);
  await inShopForWrite(trx, shopId)
    .insertInto('gateway_connections', {
      gateway: row.gateway,
      sealed_credentials: row.sealed_credentials,
      settings,
      created_at: row.now,
      updated_at: row.now,
    })
    .onConflict((oc) =>
      oc
        .columns(['shop_id', 'gateway'])
        .doUpdateSet({ sealed_credentials: row.sealed_credentials, settings, updated_at: row.now }),
    )
    .execute();
}

/** The shop's connection to the provider, if it has one. */
export async function gatewayConnection(
  db: ReadDb,
  shopId: string,
  gateway: string,
): Promise<GatewayConnectionRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('gateway_connections')
    .selectAll()
    .where('gateway', '=', gateway)
    .executeTakeFirst();
}

/** The providers the shop is connected to, by code. */
export async function connectedGatewayCodes(db: ReadDb, shopId: string): Promise<string[]> {
  const rows = await inShop(db, shopId)
    .selectFrom('gateway_connections')
    .select('gateway')
    .orderBy('gateway')
    .execute();
  return rows.map((r) => r.gateway);
}
