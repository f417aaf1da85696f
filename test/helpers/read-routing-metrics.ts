// What the read routing of this process did and sees (src/platform/read-routing.ts), read from its metrics, for the
// replica tests and the replica bench row that run the stack in this process.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { registry } from '../../src/platform/metrics';

/** Read operations by `target:reason` since the process started (mdapi_db_reads_total). */
export async function readCounts(): Promise<Map<string, number>> {
  const metric = await registry.getSingleMetric('mdapi_db_reads_total')!.get();
  return new Map(metric.values.map((v) => [`${String(v.labels.target)}:${String(v.labels.reason)}`, v.value]));
}

/** Where the reads `work` made went: `target:reason` -> how many (only those that moved). */
export async function targetsOf(work: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await readCounts();
  await work();
  const moved: Record<string, number> = {};
  for (const [series, n] of await readCounts())
    if (n !== (before.get(series) ?? 0)) moved[series] = n - (before.get(series) ?? 0);
  return moved;
}

/** A per-replica gauge (`mdapi_db_replica_up`, `mdapi_db_replica_lag_seconds`) of the first replica. */
export async function replicaGauge(name: string): Promise<number | undefined> {
  const metric = await registry.getSingleMetric(name)!.get();
  return metric.values.find((v) => v.labels.replica === '0')?.value;
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The replica has replayed everything the primary has written so far, and this process's routing has measured it
 * current (up, lag under 1 s): until then reads go to the primary as `lagging`.
 */
export async function replicaCaughtUp(
  primary: Kysely<Database>,
  replica: Kysely<Database>,
  timeoutMs?: number,
): Promise<void> {
  const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(primary);
  await waitFor(
    'the replica replays the primary',
    async () =>
      (await sql<{ ok: boolean }>`select pg_last_wal_replay_lsn() >= ${rows[0]!.lsn}::pg_lsn as ok`.execute(replica))
        .rows[0]!.ok === true,
    timeoutMs,
  );
  await waitFor(
    'the routing sees the replica current',
    async () => {
      const [up, lag] = [await replicaGauge('mdapi_db_replica_up'), await replicaGauge('mdapi_db_replica_lag_seconds')];
      return up === 1 && lag !== undefined && lag < 1;
    },
    timeoutMs,
  );
}
