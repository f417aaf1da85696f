// Tracing (issue 28): an event and a queued mail remember the W3C `traceparent` of the request that wrote them, so
// the worker's span that delivers or sends them links back to that request's trace. Null when tracing is off (the
// default) or the writer had no span.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table events add column traceparent text`.execute(db);
  await sql`alter table outbound_emails add column traceparent text`.execute(db);
}
