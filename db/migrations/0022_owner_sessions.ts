// Shop owner accounts, the hosted consent page's sign-in sessions, and the session trail (issue 13, items 2 and 6).
//
// - owner_accounts: a person who may approve OAuth apps for one shop, created by the CLI (`owner create`). The email
//   is unique across shops (the sign-in form asks for no shop: the account names it). The password is stored only as
//   an argon2id hash (src/auth/passwords.ts).
// - owner_sessions: one sign-in on the consent page (`cs_…`): start, IP, user agent, expiry, end. The browser holds a
//   random token in an HttpOnly cookie; only its SHA-256 is stored, so a database read gives no usable cookie.
// - owner_sign_in_failures: failed sign-ins, by IP and by email, counted over a window to limit guessing across every
//   process (PostgreSQL, not process memory). Not shop-owned: the email tried may name no account.
// - audit_entries gains owner_id and session_id (composite foreign keys), and operation_id becomes nullable: the
//   consent page's sign-in, sign-out, approvals and denials are entries of the shop's trail with their session and no
//   API operation.
// - oauth_grants.session_id (0021) points at the session that approved it, with a composite foreign key.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table owner_accounts (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    email text not null check (char_length(email) between 3 and 254 and email = lower(email)),
    password_hash text not null,
    created_at timestamptz not null default now(),
    disabled_at timestamptz,
    constraint owner_accounts_shop_id_id_key unique (shop_id, id),
    constraint owner_accounts_email_key unique (email)
  )`.execute(db);

  await sql`create table owner_sessions (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    owner_id text collate "C" not null,
    token_hash text not null unique,
    ip text,
    user_agent text,
    started_at timestamptz not null default now(),
    expires_at timestamptz not null,
    ended_at timestamptz,
    constraint owner_sessions_shop_id_id_key unique (shop_id, id),
    constraint owner_sessions_owner_fkey foreign key (shop_id, owner_id) references owner_accounts (shop_id, id)
  )`.execute(db);
  await sql`create index owner_sessions_owner_idx on owner_sessions (shop_id, owner_id)`.execute(db);

  await sql`create table owner_sign_in_failures (
    id bigint generated always as identity primary key,
    ip text not null,
    email text not null,
    failed_at timestamptz not null default now()
  )`.execute(db);
  await sql`create index owner_sign_in_failures_ip_idx on owner_sign_in_failures (ip, failed_at)`.execute(db);
  await sql`create index owner_sign_in_failures_email_idx on owner_sign_in_failures (email, failed_at)`.execute(db);

  await sql`alter table audit_entries
    alter column operation_id drop not null,
    add column owner_id text collate "C",
    add column session_id text collate "C",
    add constraint audit_entries_owner_fkey foreign key (shop_id, owner_id) references owner_accounts (shop_id, id),
    add constraint audit_entries_session_fkey foreign key (shop_id, session_id) references owner_sessions (shop_id, id)
  `.execute(db);
  await sql`create index audit_entries_session_idx on audit_entries (shop_id, session_id, occurred_at, id)
    where session_id is not null`.execute(db);

  await sql`alter table oauth_grants
    add constraint oauth_grants_session_fkey foreign key (shop_id, session_id) references owner_sessions (shop_id, id)
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table oauth_grants drop constraint if exists oauth_grants_session_fkey`.execute(db);
  await sql`drop index if exists audit_entries_session_idx`.execute(db);
  await sql`delete from audit_entries where operation_id is null`.execute(db);
  await sql`alter table audit_entries
    drop constraint if exists audit_entries_session_fkey,
    drop constraint if exists audit_entries_owner_fkey,
    drop column if exists session_id,
    drop column if exists owner_id,
    alter column operation_id set not null`.execute(db);
  for (const t of ['owner_sign_in_failures', 'owner_sessions', 'owner_accounts'])
    await sql`drop table if exists ${sql.table(t)}`.execute(db);
}
