// Tracing (issue 28): an event remembers the W3C `traceparent` of the request that wrote it, so the worker's span that
// delivers it links back to that request's trace. Null when tracing is off (the default) or the writer had no span.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table events add column traceparent text`.execute(db);
}
