// Test mode (issue 26). Each live shop may have one test twin: a shop row of its own (`livemode = false`) linked to
// the live one by `live_shop_id`. Every other table already keys its rows and references by `(shop_id, id)`, so the
// database refuses a reference between a shop's live and test data exactly as it refuses one between two shops,
// and every query scoped to a shop is scoped to one mode without being changed. A test credential belongs to the
// twin; existing credentials belong to live shops and stay valid as live ones.
//
// A twin's clock may run ahead of real time (`clock_offset_ms`, moved only forward by `POST /test-clock/advance`);
// a live shop's never does (the check). The SANDBOX gateway, which completes an order without money moving, is
// taken off live shops: it belongs to test mode only.
//
// Events remember the mode they were written in (`livemode`), so an event's body says it without a join.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table shops
    add column livemode boolean not null default true,
    add column live_shop_id text references shops (id),
    add column clock_offset_ms bigint not null default 0,
    add constraint shops_live_shop_id_key unique (live_shop_id),
    add constraint shops_mode_link_check check (livemode = (live_shop_id is null)),
    add constraint shops_test_clock_check check (clock_offset_ms >= 0 and (not livemode or clock_offset_ms = 0))`.execute(
    db,
  );
  // The worker asks for the shops whose clock runs ahead on every round: a handful of rows, found by this index.
  await sql`create index shops_clock_ahead_idx on shops (id) where clock_offset_ms > 0`.execute(db);
  await sql`alter table events add column livemode boolean not null default true`.execute(db);
  await sql`delete from gateways g using shops s where g.shop_id = s.id and s.livemode and g.code = 'SANDBOX'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table events drop column livemode`.execute(db);
  await sql`drop index shops_clock_ahead_idx`.execute(db);
  await sql`delete from shops where not livemode`.execute(db);
  await sql`alter table shops drop column clock_offset_ms, drop column live_shop_id, drop column livemode`.execute(db);
}
