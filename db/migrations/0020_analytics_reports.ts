// Analytics reports (issue 14): a report is a shop's definition (name, type, default format), created by the CLI and
// fixtures; POST /analytics/reports/{id}/generate queues a generation (one row per request, claimed by the worker
// with FOR UPDATE SKIP LOCKED and a lease) and moves the report to GENERATING in the request's transaction. The
// worker computes the figures from the shop's orders, refunds and customers for the generation's period, stores the
// output on the report (READY, generated_at) or gives a reason (FAILED). At most one generation of a report is
// queued at a time (a partial unique index behind the report row's lock).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table analytics_reports (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    name text not null check (char_length(name) between 1 and 200),
    type text not null check (type in ('SALES', 'PRODUCTS', 'CUSTOMERS', 'GATEWAYS', 'AFFILIATES')),
    format text not null default 'CSV' check (format in ('CSV', 'JSON')),
    status text not null default 'NEVER_GENERATED'
      check (status in ('NEVER_GENERATED', 'GENERATING', 'READY', 'FAILED')),
    period_from timestamptz,
    period_to timestamptz,
    generation_id text collate "C",
    generated_at timestamptz,
    failure_reason text check (char_length(failure_reason) <= 1000),
    content text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint analytics_reports_shop_id_id_key unique (shop_id, id),
    constraint analytics_reports_period check (period_to > period_from),
    constraint analytics_reports_ready_has_output
      check (status <> 'READY' or (content is not null and generated_at is not null and generation_id is not null)),
    constraint analytics_reports_failed_has_reason check (status <> 'FAILED' or failure_reason is not null),
    constraint analytics_reports_generating_has_generation check (status <> 'GENERATING' or generation_id is not null)
  )`.execute(db);
  await sql`create index analytics_reports_shop_created_idx on analytics_reports (shop_id, created_at, id)`.execute(db);

  await sql`create table analytics_report_generations (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    report_id text collate "C" not null,
    type text not null check (type in ('SALES', 'PRODUCTS', 'CUSTOMERS', 'GATEWAYS', 'AFFILIATES')),
    format text not null check (format in ('CSV', 'JSON')),
    period_from timestamptz not null,
    period_to timestamptz not null,
    status text not null default 'QUEUED' check (status in ('QUEUED', 'DONE', 'FAILED')),
    attempts integer not null default 0 check (attempts >= 0),
    lease_until timestamptz,
    lease_token text,
    error text check (char_length(error) <= 1000),
    requested_at timestamptz not null default now(),
    finished_at timestamptz,
    constraint analytics_report_generations_shop_id_id_key unique (shop_id, id),
    constraint analytics_report_generations_report_fkey foreign key (shop_id, report_id)
      references analytics_reports (shop_id, id),
    constraint analytics_report_generations_period check (period_to > period_from),
    constraint analytics_report_generations_finished check ((status = 'QUEUED') = (finished_at is null))
  )`.execute(db);
  // One queued generation per report: two generate requests can never queue two.
  await sql`create unique index analytics_report_generations_one_queued
    on analytics_report_generations (shop_id, report_id) where status = 'QUEUED'`.execute(db);
  await sql`create index analytics_report_generations_due_idx
    on analytics_report_generations (requested_at) where status = 'QUEUED'`.execute(db);
  await sql`alter table analytics_reports add constraint analytics_reports_generation_fkey
    foreign key (shop_id, generation_id) references analytics_report_generations (shop_id, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table analytics_reports drop constraint analytics_reports_generation_fkey`.execute(db);
  await sql`drop table analytics_report_generations`.execute(db);
  await sql`drop table analytics_reports`.execute(db);
}
