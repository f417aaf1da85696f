// What an operator command is given by its entry point (the command line, the server's first-run demo, a test):
// the database, the configuration and the clock. Nothing under src/ops reads the environment or the wall clock
// itself, so a test runs a command at the time and with the settings it chooses.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import type { Config } from '../config';
import type { Clock } from '../platform/clock';

export interface Operator {
  db: Kysely<Database>;
  config: Config;
  clock: Clock;
}
