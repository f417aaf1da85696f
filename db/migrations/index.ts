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
import * as m0009 from './0009_catalog_extras';
import * as m0010 from './0010_blacklist';
import * as m0011 from './0011_wallets';
import * as m0012 from './0012_affiliates';
import * as m0013 from './0013_licenses';
import * as m0014 from './0014_subscriptions';
import * as m0015 from './0015_disputes_reviews_tickets';
import * as m0016 from './0016_resellers';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_idempotency': m0002,
  '0003_customers_serials': m0003,
  '0004_tenancy_keys': m0004,
  '0005_outbox': m0005,
  '0006_audit': m0006,
  '0007_orders': m0007,
  '0008_dynamic_delivery_secret': m0008,
  '0009_catalog_extras': m0009,
  '0010_blacklist': m0010,
  '0011_wallets': m0011,
  '0012_affiliates': m0012,
  '0013_licenses': m0013,
  '0014_subscriptions': m0014,
  '0015_disputes_reviews_tickets': m0015,
  '0016_resellers': m0016,
};
