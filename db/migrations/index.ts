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
import * as m0020 from './0020_analytics_reports';
import * as m0017 from './0017_themes';
import * as m0018 from './0018_store_settings';
import * as m0019 from './0019_marketing_bots';
import * as m0021 from './0021_oauth';
import * as m0022 from './0022_owner_sessions';
import * as m0023 from './0023_bot_notifications';
import * as m0024 from './0024_email_marketing_sync';
import * as m0025 from './0025_events_without_secrets';
import * as m0026 from './0026_webhook_attempt_errors';
import * as m0027 from './0027_idempotency_leases';
import * as m0028 from './0028_test_mode';
import * as m0029 from './0029_trace_context';
import * as m0030 from './0030_test_clock_bound';
import * as m0031 from './0031_gateway_connections';
import * as m0032 from './0032_order_item_product_checked_at_commit';

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
  '0017_themes': m0017,
  '0018_store_settings': m0018,
  '0019_marketing_bots': m0019,
  '0020_analytics_reports': m0020,
  '0021_oauth': m0021,
  '0022_owner_sessions': m0022,
  '0023_bot_notifications': m0023,
  '0024_email_marketing_sync': m0024,
  '0025_events_without_secrets': m0025,
  '0026_webhook_attempt_errors': m0026,
  '0027_idempotency_leases': m0027,
  '0028_test_mode': m0028,
  '0029_trace_context': m0029,
  '0030_test_clock_bound': m0030,
  '0031_gateway_connections': m0031,
  '0032_order_item_product_checked_at_commit': m0032,
};
