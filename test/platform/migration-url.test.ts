// The database settings a start reads beside DATABASE_URL (src/config.ts): DATABASE_MIGRATION_URL, a direct way to the
// database DATABASE_URL names for the migrations a transaction-mode pooler cannot carry
// (test/topology/pgbouncer.test.ts shows the migrations taking it), and DATABASE_POOL_SIZE.
import { openDatabase, openReplicas } from '../../db/database';
import { ConfigError, loadConfig } from '../../src/config';

describe('DATABASE_MIGRATION_URL', () => {
  test('is read beside DATABASE_URL, and unset means the migrations use DATABASE_URL', () => {
    const pooled = 'postgres://app@pgbouncer:6432/shop';
    const direct = 'postgresql://app@primary:5432/shop';
    expect(loadConfig({ DATABASE_URL: pooled, DATABASE_MIGRATION_URL: direct }).databaseMigrationUrl).toBe(direct);
    expect(loadConfig({ DATABASE_URL: pooled }).databaseMigrationUrl).toBeUndefined();
    expect(loadConfig({ DATABASE_URL: pooled, DATABASE_MIGRATION_URL: '' }).databaseMigrationUrl).toBeUndefined();
  });

  test('stops the start without DATABASE_URL (it would migrate another database than the embedded one)', () => {
    expect(() => loadConfig({ DATABASE_MIGRATION_URL: 'postgres://app@primary/shop' })).toThrow(
      new ConfigError('DATABASE_MIGRATION_URL needs DATABASE_URL: it is a direct way to the same database'),
    );
  });

  test('must be a PostgreSQL URL', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgres://a@b/c', DATABASE_MIGRATION_URL: 'mysql://app@primary/shop' }),
    ).toThrow('DATABASE_MIGRATION_URL must use postgres: or postgresql:');
  });
});

describe('DATABASE_POOL_SIZE', () => {
  test('bounds the connections a process opens to DATABASE_URL and to each replica', async () => {
    expect(loadConfig({}).databasePoolSize).toBe(10);
    expect(loadConfig({ DATABASE_POOL_SIZE: '3' }).databasePoolSize).toBe(3);
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '501' })).toThrow(ConfigError);
    // Nothing connects until a query is made: the pools can be built against addresses nobody serves.
    const primary = await openDatabase({
      databaseUrl: 'postgres://app@127.0.0.1:1/shop',
      dataDir: '',
      databasePoolSize: 3,
    });
    const [replica] = openReplicas(['postgres://app@127.0.0.1:1/shop'], { poolSize: 3, queryTimeoutMs: 30_000 });
    try {
      expect(primary.pool!.options.max).toBe(3);
      expect(replica!.pool!.options.max).toBe(3);
      expect((replica!.pool!.options as { query_timeout?: number }).query_timeout).toBe(30_000);
    } finally {
      await primary.close();
      await replica!.close();
    }
  });
});
