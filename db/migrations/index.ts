// Every migration, in order. A static list (rather than reading the folder) works the same under tsx, jest and
// the compiled build. Add new files here with the next number.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation';
import * as m0002 from './0002_idempotency';
import * as m0003 from './0003_customers_serials';
import * as m0004 from './0004_tenancy_keys';
import * as m0005 from './0005_outbox';
import * as m0006 from './0006_audit';
import * as m0007 from './0007_orders';
import * as m0008 from './0008_dynamic_delivery_secret';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_idempotency': m0002,
  '0003_customers_serials': m0003,
  '0004_tenancy_keys': m0004,
  '0005_outbox': m0005,
  '0006_audit': m0006,
  '0007_orders': m0007,
  '0008_dynamic_delivery_secret': m0008,
};
