// DATABASE_MIGRATION_URL (src/config.ts): a direct way to the database DATABASE_URL names, for the migrations a
// transaction-mode pooler cannot carry. test/topology/pgbouncer.test.ts shows the migrations taking it; here, the
// settings a start refuses.
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
