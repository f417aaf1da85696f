// Disputes, reviews and support tickets (src/domain/support/disputes.ts, reviews.ts, tickets.ts).
// Tenancy as in 0004: a unique (shop_id, id) per table, composite foreign keys between shop rows.
// What the database itself guarantees: an order has at most one dispute that is not decided (OPEN or UNDER_REVIEW),
// a decided dispute has its decision time, an order's product is reviewed once, a ticket belongs to a customer of
// the shop (and its order, when it names one, to the same shop), and a ticket's counters match its messages' rows
// as written by src/domain/support/tickets.ts in the same transaction.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table disputes (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_id text collate "C" not null,
    -- The order's public id (immutable), so a page of disputes is one query.
    order_uniqid uuid not null,
    gateway text collate "C" not null,
    reason text not null check (reason in ('FRAUDULENT', 'PRODUCT_NOT_RECEIVED', 'PRODUCT_UNACCEPTABLE', 'DUPLICATE',
      'SUBSCRIPTION_CANCELED', 'CREDIT_NOT_PROCESSED', 'GENERAL')),
    status text not null check (status in ('OPEN', 'UNDER_REVIEW', 'WON', 'LOST', 'CLOSED')),
    amount numeric(20, 8) not null check (amount > 0),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    customer_email text collate "C" check (customer_email = lower(customer_email)),
    -- The order's status when the dispute opened: where a WON or CLOSED dispute puts it back.
    order_status_before text not null check (order_status_before in ('COMPLETED', 'PARTIALLY_REFUNDED')),
    evidence_due_by timestamptz,
    closed_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint disputes_shop_id_id_key unique (shop_id, id),
    constraint disputes_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint disputes_closed_at check ((status in ('WON', 'LOST', 'CLOSED')) = (closed_at is not null))
  )`.execute(db);
  // One undecided dispute per order, whatever the code does.
  await sql`create unique index disputes_one_open_per_order on disputes (shop_id, order_id)
    where status in ('OPEN', 'UNDER_REVIEW')`.execute(db);
  // GET /disputes: newest first, keyset on (created_at, id); each filter in that order.
  await sql`create index disputes_shop_created_idx on disputes (shop_id, created_at, id)`.execute(db);
  for (const column of ['status', 'reason', 'order_id']) {
    await sql`create index ${sql.raw(`disputes_shop_${column}_created_idx`)} on disputes (shop_id, ${sql.ref(column)}, created_at, id)`.execute(
      db,
    );
  }

  await sql`create table reviews (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    order_id text collate "C" not null,
    -- Null only for an order without products (a generic payment); set null if the product is deleted.
    product_id text,
    customer_id text collate "C",
    customer_email text collate "C" check (customer_email = lower(customer_email)),
    rating integer not null check (rating between 1 and 5),
    message text check (char_length(message) <= 5000),
    reply text check (char_length(reply) <= 5000),
    replied_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint reviews_shop_id_id_key unique (shop_id, id),
    constraint reviews_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id),
    constraint reviews_product_fkey foreign key (shop_id, product_id) references products (shop_id, id) on delete set null (product_id),
    constraint reviews_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint reviews_replied check ((reply is null) = (replied_at is null))
  )`.execute(db);
  // One review per product of an order. (An order without products has one review with a null product: checked
  // under the order's row lock, src/domain/support/reviews.ts; a deleted product's reviews keep their order.)
  await sql`create unique index reviews_order_product_key on reviews (shop_id, order_id, product_id)`.execute(db);
  await sql`create index reviews_shop_created_idx on reviews (shop_id, created_at, id)`.execute(db);
  for (const column of ['rating', 'product_id', 'order_id']) {
    await sql`create index ${sql.raw(`reviews_shop_${column}_created_idx`)} on reviews (shop_id, ${sql.ref(column)}, created_at, id)`.execute(
      db,
    );
  }

  await sql`create table tickets (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    customer_id text collate "C" not null,
    customer_email text collate "C" not null check (customer_email = lower(customer_email)),
    order_id text collate "C",
    subject text not null check (char_length(subject) between 1 and 200),
    status text not null check (status in ('OPEN', 'PENDING', 'CLOSED')),
    priority text not null check (priority in ('LOW', 'NORMAL', 'HIGH')),
    message_count integer not null check (message_count >= 1),
    last_message_at timestamptz not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint tickets_shop_id_id_key unique (shop_id, id),
    constraint tickets_customer_fkey foreign key (shop_id, customer_id) references customers (shop_id, id),
    constraint tickets_order_fkey foreign key (shop_id, order_id) references orders (shop_id, id)
  )`.execute(db);
  await sql`create table ticket_messages (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    ticket_id text collate "C" not null,
    author text not null check (author in ('BUYER', 'MERCHANT')),
    body text not null check (char_length(body) between 1 and 5000),
    created_at timestamptz not null default now(),
    constraint ticket_messages_shop_id_id_key unique (shop_id, id),
    constraint ticket_messages_ticket_fkey foreign key (shop_id, ticket_id) references tickets (shop_id, id) on delete cascade
  )`.execute(db);
  await sql`create index ticket_messages_ticket_idx on ticket_messages (shop_id, ticket_id, created_at)`.execute(db);
  // GET /tickets: most recent message first (keyset on last_message_at, id), or by creation; each filter in the
  // default order.
  await sql`create index tickets_shop_last_message_idx on tickets (shop_id, last_message_at, id)`.execute(db);
  await sql`create index tickets_shop_created_idx on tickets (shop_id, created_at, id)`.execute(db);
  for (const column of ['status', 'priority', 'customer_email']) {
    await sql`create index ${sql.raw(`tickets_shop_${column}_last_message_idx`)} on tickets (shop_id, ${sql.ref(column)}, last_message_at, id)`.execute(
      db,
    );
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table ticket_messages`.execute(db);
  await sql`drop table tickets`.execute(db);
  await sql`drop table reviews`.execute(db);
  await sql`drop table disputes`.execute(db);
}
