// Live payments (issue 37): a shop connects to Stripe, PayPal or BTCPay Server; its sessions are payment attempts
// that the provider's webhooks and a reconciler settle, exactly once.
// - gateway_connections: one per shop and provider (a shop is one mode, so live and test credentials are two rows of
//   two shops). The credentials are sealed (AES-256-GCM, the row's identity as authenticated data); only non-secret
//   settings (a store id, a server URL) are kept in clear, for `gateway list`.
// - payment_attempts: the provider's page the session sends the buyer to (GET /payments/{uniqid} shows it again
//   without calling the provider), what the provider reported (the payment it names, the amount and currency that arrived), a
//   flag when a payment did not pay its invoice (a second payment, a short or wrong-currency one) and the state of
//   giving it back, and the reconciler's schedule and lease.
// - refunds: which attempt and provider refund a refund went through; one row per provider refund, whatever path
//   (our API, the provider's dashboard) it was made on.
// - gateway_events: the inbox of verified provider webhooks, one row per provider event (a redelivery is the same
//   row), drained by the worker with the leased-queue protocol.
// - disputes: the provider's dispute id, so its close event finds the dispute.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table gateway_connections (
    shop_id text not null references shops (id),
    gateway text collate "C" not null check (gateway in ('STRIPE', 'PAYPAL', 'BTCPAY')),
    sealed_credentials bytea not null,
    settings jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (shop_id, gateway)
  )`.execute(db);

  await sql`alter table payment_attempts
    add column session_url text,
    add column payment_ref text collate "C",
    add column paid_amount numeric(20, 8) check (paid_amount >= 0),
    add column paid_currency text,
    add column flag text check (flag in ('DUPLICATE', 'LATE', 'SHORT', 'CURRENCY')),
    add column return_status text check (return_status in ('PENDING', 'REFUNDED', 'FAILED')),
    add column reconcile_at timestamptz,
    add column reconcile_count integer not null default 0,
    add column lease_until timestamptz,
    add column lease_token text,
    add column last_error text,
    drop constraint payment_attempts_status_check,
    add constraint payment_attempts_status_check check (status in ('PENDING', 'PAID', 'FAILED', 'EXPIRED')),
    add constraint payment_attempts_return_check check ((flag is null) = (return_status is null))`.execute(db);
  // A provider's payment is one attempt: its refunds and disputes find it by the payment they name.
  await sql`create unique index payment_attempts_payment_ref_key on payment_attempts (gateway, payment_ref)
    where payment_ref is not null`.execute(db);
  // The reconciler's claim: attempts due for a look, in due order.
  await sql`create index payment_attempts_reconcile_idx on payment_attempts (reconcile_at, id)
    where reconcile_at is not null`.execute(db);

  await sql`alter table refunds
    add column attempt_id text collate "C",
    add column gateway text collate "C",
    add column provider_refund_id text collate "C",
    add constraint refunds_attempt_fkey foreign key (shop_id, attempt_id) references payment_attempts (shop_id, id)
      on delete cascade,
    add constraint refunds_provider_check check ((provider_refund_id is null) = (gateway is null))`.execute(db);
  // One refund row per provider refund, whichever way (our API, its webhook, the dashboard's webhook) it arrives.
  await sql`create unique index refunds_provider_refund_key on refunds (gateway, provider_refund_id)
    where provider_refund_id is not null`.execute(db);

  await sql`create table gateway_events (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    gateway text collate "C" not null,
    event_id text collate "C" not null,
    notice jsonb not null,
    status text not null check (status in ('PENDING', 'RETRYING', 'SUCCEEDED', 'FAILED')),
    attempts integer not null default 0,
    next_attempt_at timestamptz,
    lease_until timestamptz,
    lease_token text,
    last_error text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint gateway_events_shop_id_id_key unique (shop_id, id),
    constraint gateway_events_event_key unique (shop_id, gateway, event_id)
  )`.execute(db);
  await sql`create index gateway_events_due_idx on gateway_events (next_attempt_at, id)
    where status in ('PENDING', 'RETRYING')`.execute(db);

  await sql`alter table disputes add column provider_dispute_id text collate "C"`.execute(db);
  await sql`create unique index disputes_provider_dispute_key on disputes (gateway, provider_dispute_id)
    where provider_dispute_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index disputes_provider_dispute_key`.execute(db);
  await sql`alter table disputes drop column provider_dispute_id`.execute(db);
  await sql`drop table gateway_events`.execute(db);
  await sql`drop index refunds_provider_refund_key`.execute(db);
  await sql`alter table refunds drop constraint refunds_provider_check, drop constraint refunds_attempt_fkey,
    drop column provider_refund_id, drop column gateway, drop column attempt_id`.execute(db);
  await sql`drop index payment_attempts_reconcile_idx`.execute(db);
  await sql`drop index payment_attempts_payment_ref_key`.execute(db);
  await sql`delete from payment_attempts where status = 'EXPIRED'`.execute(db);
  await sql`alter table payment_attempts drop constraint payment_attempts_return_check,
    drop constraint payment_attempts_status_check,
    add constraint payment_attempts_status_check check (status in ('PENDING', 'PAID', 'FAILED')),
    drop column last_error, drop column lease_token, drop column lease_until, drop column reconcile_count,
    drop column reconcile_at, drop column return_status, drop column flag, drop column paid_currency,
    drop column paid_amount, drop column payment_ref, drop column session_url`.execute(db);
  await sql`drop table gateway_connections`.execute(db);
}
