// Every migration, in order. A static list (rather than reading the folder) works the same under tsx, jest and
// the compiled build. Add new files here with the next number.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};
