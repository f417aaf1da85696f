// Shops, credentials, products and variants: what the foundation needs.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Server-wide secrets (the cursor signing key) generated on first start, so every process of one deployment
  // shares them without configuration.
  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('shops')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) =>
      c
        .notNull()
        .defaultTo('free')
        .check(sql`plan in ('free', 'pro', 'business')`),
    )
    .addColumn('currency', 'text', (c) => c.notNull().check(sql`currency ~ '^[A-Z]{3}$'`))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('active')
        .check(sql`status in ('active', 'suspended')`),
    )
    .addColumn('enabled_payment_methods', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{STRIPE,PAYPAL}'`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('api_key', 'oauth_access_token')`))
    .addColumn('name', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('display_prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('credentials_shop_idx').on('credentials').columns(['shop_id', 'created_at']).execute();

  await db.schema
    .createTable('products')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('uniqid', 'uuid', (c) => c.notNull().unique())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) =>
      c.notNull().check(sql`type in ('SERIALS', 'FILE', 'SERVICE', 'DYNAMIC', 'SUBSCRIPTION')`),
    )
    .addColumn('subtype', 'text')
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull().check(sql`currency ~ '^[A-Z]{3}$'`))
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('price', 'numeric(20, 8)', (c) => c.notNull().check(sql`price >= 0`))
    .addColumn('price_display', 'numeric(20, 8)', (c) => c.notNull().check(sql`price_display >= 0`))
    .addColumn('description_tabs', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('gateways', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('custom_fields', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('delivery_instructions', 'text')
    .addColumn('quantity_min', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('quantity_max', 'integer', (c) => c.notNull().defaultTo(-1))
    .addColumn('quantity_warning', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('stock', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(-1)
        .check(sql`stock >= -1`),
    )
    .addColumn('stock_delimiter', 'text', (c) => c.notNull().defaultTo(','))
    .addColumn('unlisted', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('private', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('on_hold', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('block_vpn_proxies', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('watermark_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('sort_priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('crypto_confirmations', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('max_risk_level', 'integer', (c) => c.notNull().defaultTo(100))
    .addColumn('delivery_text', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('service_text', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('delivery_time', 'integer')
    .addColumn('dynamic_webhook', 'text')
    .addColumn('image_id', 'text')
    .addColumn('image_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('products_shop_slug_key', ['shop_id', 'slug'])
    .execute();
  // Matches the product list's order (newest first, ties by id) so a page is one index range scan.
  await db.schema
    .createIndex('products_shop_created_idx')
    .on('products')
    .columns(['shop_id', 'created_at desc', 'id desc'])
    .execute();

  await db.schema
    .createTable('product_variants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('price', 'numeric(20, 8)', (c) => c.notNull().check(sql`price >= 0`))
    .addColumn('price_display', 'numeric(20, 8)', (c) => c.notNull().check(sql`price_display >= 0`))
    .addColumn('stock', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(-1)
        .check(sql`stock >= -1`),
    )
    .addColumn('sort_priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('product_variants_product_idx')
    .on('product_variants')
    .columns(['product_id', 'sort_priority', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['product_variants', 'products', 'credentials', 'shops', 'server_secrets'])
    await db.schema.dropTable(t).execute();
}
