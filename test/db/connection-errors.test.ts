// Which database errors mean "the database could not be reached" (the API answers 503 with Retry-After, a replica is
// marked down) rather than a statement refused (a 500 or a mapped 4xx). PgBouncer's refusals are told apart by their
// message, since its SQLSTATE (08P01) is also PostgreSQL's for a real protocol violation; test/topology/cluster.test.ts
// meets the real ones with the primary restarted behind PgBouncer.
import { isConnectionError } from '../../db/connection-errors';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

test('network failures and PostgreSQL shutting down or refusing connections are connection errors', () => {
  for (const e of [
    pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
    pgError('57P01', 'terminating connection due to administrator command'),
    pgError('57P03', 'the database system is starting up'),
    pgError('08006', 'connection failure'),
    new Error('Connection terminated unexpectedly'),
  ])
    expect(isConnectionError(e)).toBe(true);
});

test("PgBouncer's refusals while it cannot lend a server connection are connection errors", () => {
  for (const message of [
    'server login has been failing, try again later (server_login_retry)',
    'pgbouncer cannot connect to server',
    'query_wait_timeout',
    'no more connections allowed (max_client_conn)',
    'server conn crashed?',
  ])
    expect(isConnectionError(pgError('08P01', message))).toBe(true);
});

test("a statement refused, and PostgreSQL's own protocol violation, are not", () => {
  for (const e of [
    pgError('08P01', 'bind message supplies 2 parameters, but prepared statement "" requires 1'),
    pgError('23505', 'duplicate key value violates unique constraint "orders_pkey"'),
    pgError('40001', 'could not serialize access due to concurrent update'),
    pgError('57014', 'canceling statement due to statement timeout'),
    new Error('something else'),
    undefined,
  ])
    expect(isConnectionError(e)).toBe(false);
});
