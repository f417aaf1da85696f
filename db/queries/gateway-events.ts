// The inbox of verified provider webhooks: one row per provider event of a shop (a redelivery finds its row and adds
// nothing), applied by the worker with the leased-queue protocol (db/queries/leased-queue.ts).
import type { Transaction } from 'kysely';
import type { Database } from '../tables';
import { claimDue, type Lease } from './leased-queue';
import { inShopForWrite } from './shop-scope';

export interface GatewayEventClaim {
  id: string;
  shop_id: string;
  gateway: string;
  event_id: string;
  notice: unknown;
  attempts: number;
}

/** Queues the events not seen before; returns how many were new. */
export async function insertGatewayEvents(
  trx: Transaction<Database>,
  shopId: string,
  rows: { id: string; gateway: string; event_id: string; notice: unknown }[],
  now: Date,
): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await inShopForWrite(trx, shopId)
    .insertInto(
      'gateway_events',
      rows.map((r) => ({
        id: r.id,
        gateway: r.gateway,
        event_id: r.event_id,
        notice: JSON.stringify(r.notice),
        status: 'PENDING' as const,
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) => oc.columns(['shop_id', 'gateway', 'event_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

export async function claimGatewayEvents(trx: Transaction<Database>, lease: Lease): Promise<GatewayEventClaim[]> {
  return claimDue<GatewayEventClaim>(trx, 'gateway_events', lease, [
    'id',
    'shop_id',
    'gateway',
    'event_id',
    'notice',
    'attempts',
  ]);
}
