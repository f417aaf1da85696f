// Where the primary's write-ahead log is and how far a streaming replica has replayed it, as byte positions
// (pg_wal_lsn_diff from 0/0, returned as text: a position outgrows a JavaScript number's exact range), which
// src/platform/read-routing.ts compares to decide whether a replica may serve a read.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../tables';

/**
 * The primary's WAL insert position, read after a write committed: at or past the end of that write's commit
 * record whatever `synchronous_commit` says, so a replica that has replayed up to it holds the write.
 */
export async function walInsertPosition(db: Kysely<Database>): Promise<bigint> {
  const { rows } = await sql<{
    lsn: string;
  }>`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text as lsn`.execute(db);
  return BigInt(rows[0]!.lsn);
}

/**
 * The primary's WAL write position: what a replica can have received. On an idle primary it equals a caught-up
 * replica's replay position (the insert position may sit past a page header no record ends at).
 */
export async function walWritePosition(db: Kysely<Database>): Promise<bigint> {
  const { rows } = await sql<{ lsn: string }>`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as lsn`.execute(
    db,
  );
  return BigInt(rows[0]!.lsn);
}

export interface ReplicaPosition {
  /** false: the server is not a standby (promoted, or the primary itself), so it does not follow the primary. */
  standby: boolean;
  /** The end of the last WAL record it replayed: every transaction committed before it is visible there. */
  replayed: bigint | undefined;
}

export async function replicaPosition(db: Kysely<Database>): Promise<ReplicaPosition> {
  const { rows } = await sql<{ standby: boolean; lsn: string | null }>`
    select pg_is_in_recovery() as standby, pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::text as lsn`.execute(db);
  const row = rows[0]!;
  return { standby: row.standby, replayed: row.lsn === null ? undefined : BigInt(row.lsn) };
}
