// Each shop's signing secret for dynamic-delivery callbacks (Standard Webhooks, `whsec_…`), sealed with the secret
// box (src/platform/secret-box.ts) as webhook endpoint secrets are. Created on first use; the merchant reads it with
// `npm run cli -- dynamic-secret --shop SHOP_ID`. Keyed by (shop_id, purpose): one secret per shop and purpose,
// and the key starts with shop_id as every shop-owned table's does (test/platform/tenancy.test.ts).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table dynamic_delivery_secrets (
    shop_id text not null references shops (id),
    purpose text not null default 'dynamic_delivery' check (purpose = 'dynamic_delivery'),
    secret bytea not null,
    created_at timestamptz not null default now(),
    primary key (shop_id, purpose)
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table dynamic_delivery_secrets`.execute(db);
}
