// What the operator's metrics read from the database (src/platform/metrics.ts), across every shop: how much work
// waits in each outbox queue and how old its oldest item is. One statement per scrape, each part answered from the
// queue's partial "due" index (only waiting rows are in it), so it stays cheap however large the tables grow.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../tables';

export interface QueueState {
  queue: string;
  /** Items waiting: due now or scheduled for a retry. */
  depth: number;
  /** Seconds since the oldest waiting item was queued; 0 when none waits. */
  oldest_seconds: number;
}

/** Every queue's depth and the age of its oldest item (`webhook_deliveries`' is the outbox's lag). */
export async function queueStates(db: Kysely<Database>): Promise<QueueState[]> {
  const part = (queue: string, table: string, waiting: ReturnType<typeof sql>) =>
    sql`select ${queue}::text as queue, count(*)::int as depth,
        coalesce(greatest(0, extract(epoch from now() - min(created_at))), 0)::float8 as oldest_seconds
      from ${sql.table(table)} where ${waiting}`;
  const pending = sql`status in ('PENDING', 'RETRYING')`;
  const { rows } = await sql<QueueState>`
    ${part('webhook_deliveries', 'webhook_deliveries', sql`next_attempt_at is not null`)}
    union all ${part('mail', 'outbound_emails', sql`next_attempt_at is not null`)}
    union all ${part('dynamic_deliveries', 'dynamic_deliveries', pending)}
    union all ${part('bot_notifications', 'bot_notifications', pending)}
    union all ${part('email_marketing_syncs', 'email_marketing_syncs', pending)}`.execute(db);
  return rows;
}
