// Themes: a shop's storefront themes (one base each, settings, at most one live theme per shop), every saved
// revision of a theme's document (revision 1 is the base's starter document; a save adds the next one, so the draft
// is the theme's `revision` and the published document its `published_revision`), and private preview sessions of
// one revision, addressed by an unguessable token of which only the SHA-256 is stored.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table themes (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    name text not null check (char_length(name) between 1 and 100),
    base text not null check (base in ('default', 'classic', 'pulse', 'starlight', 'clean-minimal',
      'apex', 'nebula', 'phantom', 'shadow', 'vault')),
    settings jsonb not null default '{}'::jsonb check (jsonb_typeof(settings) = 'object'),
    settings_updated_at timestamptz not null default now(),
    revision integer not null default 1 check (revision >= 1),
    published_revision integer check (published_revision between 1 and revision),
    live boolean not null default false,
    published_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint themes_shop_id_id_key unique (shop_id, id),
    constraint themes_live_is_published check (not live or published_revision is not null),
    constraint themes_published_at check ((published_revision is null) = (published_at is null))
  )`.execute(db);
  // The list: newest first (ties by id).
  await sql`create index themes_shop_created_idx on themes (shop_id, created_at desc, id desc)`.execute(db);
  // One live theme per shop.
  await sql`create unique index themes_shop_live_key on themes (shop_id) where live`.execute(db);

  await sql`create table theme_revisions (
    shop_id text not null references shops (id),
    theme_id text collate "C" not null,
    revision integer not null check (revision >= 1),
    document jsonb not null check (jsonb_typeof(document) = 'object'),
    created_at timestamptz not null default now(),
    constraint theme_revisions_pkey primary key (shop_id, theme_id, revision),
    constraint theme_revisions_theme_fkey foreign key (shop_id, theme_id) references themes (shop_id, id)
      on delete cascade
  )`.execute(db);

  await sql`create table theme_preview_sessions (
    id text collate "C" primary key,
    shop_id text not null references shops (id),
    theme_id text collate "C" not null,
    revision integer not null,
    -- SHA-256 (hex) of the token in the preview URL: the URL is shown once, the token never stored.
    token_hash text not null check (token_hash ~ '^[0-9a-f]{64}$'),
    expires_at timestamptz not null,
    stopped_at timestamptz,
    created_at timestamptz not null default now(),
    constraint theme_preview_sessions_shop_id_id_key unique (shop_id, id),
    constraint theme_preview_sessions_token_key unique (token_hash),
    constraint theme_preview_sessions_theme_fkey foreign key (shop_id, theme_id) references themes (shop_id, id)
      on delete cascade,
    constraint theme_preview_sessions_revision_fkey foreign key (shop_id, theme_id, revision)
      references theme_revisions (shop_id, theme_id, revision) on delete cascade
  )`.execute(db);
  await sql`create index theme_preview_sessions_theme_idx on theme_preview_sessions (shop_id, theme_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table theme_preview_sessions`.execute(db);
  await sql`drop table theme_revisions`.execute(db);
  await sql`drop table themes`.execute(db);
}
