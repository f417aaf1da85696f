// What a bench run costs the server besides time: statements sent to PostgreSQL (each one a round trip: pg sends
// one query per call and waits for its answer) and CPU of this process. Counted by a hook on the driver itself
// (pg's Client#query, which every pool client, Kysely's included, goes through), not estimated from the code.
// The servers of the write rows run in this process (the load generator does not), so the process's CPU time
// during a run is theirs.
import { readdirSync, readFileSync } from 'node:fs';
import { Client } from 'pg';

let statements = 0;
const recorders = new Set<string[]>();
const query = Client.prototype.query as (...args: unknown[]) => unknown;
(Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function countedQuery(
  this: Client,
  ...args: unknown[]
) {
  statements++;
  if (recorders.size > 0) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : (first?.text ?? '?');
    for (const r of recorders) r.push(text);
  }
  return query.apply(this, args);
};

export interface Cost {
  /** Statements sent to PostgreSQL per request. */
  roundTrips: number;
  /** CPU ms of this process (user + system) per request. */
  cpuMs: number;
  /**
   * CPU ms of the PostgreSQL server's processes on this machine per request (Linux /proc, 10 ms ticks; absent where
   * they cannot be read): the other half of a write's cost, which a rate limited by the database's CPU shows.
   */
  dbCpuMs?: number;
}

/** CPU ms so far of every `postgres` process on this machine (its backends and helpers), or undefined. */
function postgresCpuMs(): number | undefined {
  try {
    let ticks = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      const close = stat.lastIndexOf(')');
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
      const fields = stat.slice(close + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of the line)
    }
    return ticks * 10;
  } catch {
    return undefined;
  }
}

/** Starts counting; `stop(requests)` gives the cost per request of what ran in between. */
export function measureCost(): { stop(requests: number): Cost } {
  const from = statements;
  const cpu = process.cpuUsage();
  const db = postgresCpuMs();
  return {
    stop(requests: number): Cost {
      const used = process.cpuUsage(cpu);
      const dbNow = postgresCpuMs();
      const n = Math.max(1, requests);
      return {
        roundTrips: Math.round(((statements - from) / n) * 10) / 10,
        cpuMs: Math.round(((used.user + used.system) / 1000 / n) * 100) / 100,
        ...(db === undefined || dbNow === undefined ? {} : { dbCpuMs: Math.round(((dbNow - db) / n) * 100) / 100 }),
      };
    },
  };
}

/** Statements sent so far (for a test that counts one request's round trips). */
export function statementsSent(): number {
  return statements;
}

/** Records the text of every statement sent until `stop()`, which returns them (a test's view of one request). */
export function recordStatements(): { stop(): string[] } {
  const texts: string[] = [];
  recorders.add(texts);
  return {
    stop() {
      recorders.delete(texts);
      return texts;
    },
  };
}
