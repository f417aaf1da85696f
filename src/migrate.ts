// `npm run migrate`: applies pending migrations and exits.
import { openDatabase } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const database = await openDatabase(loadConfig());
  try {
    const applied = await migrateToLatest(database.db);
    console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Already up to date.');
  } finally {
    await database.close();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
