// OAuth 2.0 authorization server (issue 13): apps (clients), grants, authorization codes, refresh tokens, and the
// access tokens' link to their grant.
//
// Apps are global rows (a third-party app is installed by any shop; `owner_shop_id`, when set, limits it to that one
// shop). Everything a shop grants is shop-owned with composite foreign keys: a grant (one approval = one token
// family), the codes it issued, its refresh tokens, and its access tokens (rows of `credentials`, kind
// `oauth_access_token`, with `grant_id` and `expires_at`). Revoking a grant kills every token of its family at once,
// because authentication joins the grant (db/queries/credentials.ts). Secrets, codes and tokens are stored only as
// SHA-256 hashes.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table oauth_clients (
    id text collate "C" primary key,
    name text not null check (char_length(name) between 1 and 100),
    is_public boolean not null,
    secret_hash text unique,
    secret_prefix text,
    redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 20),
    scopes text[] not null check (cardinality(scopes) >= 1),
    owner_shop_id text collate "C" references shops (id),
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint oauth_clients_secret check (is_public = (secret_hash is null))
  )`.execute(db);

  await sql`create table oauth_grants (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    client_id text collate "C" not null references oauth_clients (id),
    scopes text[] not null,
    granted_by_kind text not null check (granted_by_kind in ('owner', 'credential')),
    granted_by_id text not null,
    session_id text,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    revoked_reason text check (revoked_reason in ('code_replayed', 'refresh_token_reused', 'revoked_by_client',
      'revoked_by_operator', 'app_revoked')),
    constraint oauth_grants_shop_id_id_key unique (shop_id, id)
  )`.execute(db);
  await sql`create index oauth_grants_client_idx on oauth_grants (client_id, shop_id)`.execute(db);
  await sql`create index oauth_grants_shop_idx on oauth_grants (shop_id, created_at)`.execute(db);

  await sql`create table oauth_codes (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    grant_id text collate "C" not null,
    code_hash text not null unique,
    client_id text collate "C" not null references oauth_clients (id),
    redirect_uri text not null,
    code_challenge text,
    code_challenge_method text check (code_challenge_method = 'S256'),
    expires_at timestamptz not null,
    used_at timestamptz,
    created_at timestamptz not null default now(),
    constraint oauth_codes_shop_id_id_key unique (shop_id, id),
    constraint oauth_codes_grant_fkey foreign key (shop_id, grant_id) references oauth_grants (shop_id, id),
    constraint oauth_codes_pkce check ((code_challenge is null) = (code_challenge_method is null))
  )`.execute(db);
  await sql`create index oauth_codes_grant_idx on oauth_codes (shop_id, grant_id)`.execute(db);

  await sql`create table oauth_refresh_tokens (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    grant_id text collate "C" not null,
    token_hash text not null unique,
    scopes text[] not null,
    expires_at timestamptz not null,
    used_at timestamptz,
    revoked_at timestamptz,
    created_at timestamptz not null default now(),
    constraint oauth_refresh_tokens_shop_id_id_key unique (shop_id, id),
    constraint oauth_refresh_tokens_grant_fkey foreign key (shop_id, grant_id) references oauth_grants (shop_id, id)
  )`.execute(db);
  await sql`create index oauth_refresh_tokens_grant_idx on oauth_refresh_tokens (shop_id, grant_id)`.execute(db);

  // Access tokens are credentials: they expire, and belong to a grant (null for API keys).
  await sql`alter table credentials
    add column expires_at timestamptz,
    add column grant_id text collate "C",
    add constraint credentials_grant_fkey foreign key (shop_id, grant_id) references oauth_grants (shop_id, id),
    add constraint credentials_oauth_grant check (grant_id is null or kind = 'oauth_access_token')`.execute(db);
  await sql`create index credentials_grant_idx on credentials (shop_id, grant_id) where grant_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists credentials_grant_idx`.execute(db);
  await sql`alter table credentials drop constraint if exists credentials_oauth_grant,
    drop constraint if exists credentials_grant_fkey, drop column if exists grant_id,
    drop column if exists expires_at`.execute(db);
  for (const t of ['oauth_refresh_tokens', 'oauth_codes', 'oauth_grants', 'oauth_clients'])
    await sql`drop table if exists ${sql.table(t)}`.execute(db);
}
