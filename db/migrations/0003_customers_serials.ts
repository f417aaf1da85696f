// Customers (with their store-credit wallet and affiliate summary) and product serials.
// Every column a list filters or sorts on is NOT NULL and has an index (shop_id, column, id) that matches the
// keyset order, so a page is one index range scan. Sortable text columns use the "C" collation: byte order, the
// same on every server and the same as the cursor comparison.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('customers')
    .addColumn('id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    // Stored lower-cased, so `email:` filters and the unique key are case-insensitive.
    .addColumn('email', sql`text collate "C"`, (c) => c.notNull().check(sql`email = lower(email)`))
    .addColumn('name', 'text')
    .addColumn('phone', 'text')
    .addColumn('country', 'text', (c) => c.check(sql`country ~ '^[A-Z]{2}$'`))
    .addColumn('note', 'text')
    .addColumn('total_spent', 'numeric(20, 8)', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`total_spent >= 0`),
    )
    .addColumn('total_orders', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`total_orders >= 0`),
    )
    .addColumn('blacklisted', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('wallet_id', 'text', (c) => c.notNull().unique())
    .addColumn('wallet_currency', 'text', (c) => c.notNull().check(sql`wallet_currency ~ '^[A-Z]{3}$'`))
    .addColumn('wallet_balance', 'numeric(20, 8)', (c) => c.notNull().defaultTo(0))
    /** Part of the balance held (e.g. by a pending order); available = balance - held. */
    .addColumn('wallet_held', 'numeric(20, 8)', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`wallet_held >= 0`),
    )
    .addColumn('is_affiliate', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('affiliate_code', 'text')
    .addColumn('affiliate_status', 'text', (c) => c.check(sql`affiliate_status in ('ACTIVE', 'SUSPENDED')`))
    .addColumn('affiliate_commission_percent', 'numeric(5, 2)', (c) =>
      c.check(sql`affiliate_commission_percent between 0 and 100`),
    )
    .addColumn('affiliate_balance', 'numeric(20, 8)', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`affiliate_balance >= 0`),
    )
    .addColumn('affiliate_lifetime_earnings', 'numeric(20, 8)', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`affiliate_lifetime_earnings >= 0`),
    )
    .addColumn('affiliate_referred_orders', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`affiliate_referred_orders >= 0`),
    )
    /** The affiliate (a customer of the same shop) who referred this customer. */
    .addColumn('referred_by_customer_id', sql`text collate "C"`, (c) => c.references('customers.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('customers_shop_email_key', ['shop_id', 'email'])
    .addUniqueConstraint('customers_shop_affiliate_code_key', ['shop_id', 'affiliate_code'])
    .addCheckConstraint(
      'customers_affiliate_fields',
      sql`not is_affiliate or (affiliate_code is not null and affiliate_status is not null and affiliate_commission_percent is not null)`,
    )
    .execute();
  // The customer list: one index per sortable column, in keyset order (ties by id).
  await db.schema
    .createIndex('customers_shop_created_idx')
    .on('customers')
    .columns(['shop_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('customers_shop_updated_idx')
    .on('customers')
    .columns(['shop_id', 'updated_at', 'id'])
    .execute();
  await db.schema.createIndex('customers_shop_email_idx').on('customers').columns(['shop_id', 'email', 'id']).execute();
  await db.schema
    .createIndex('customers_shop_spent_idx')
    .on('customers')
    .columns(['shop_id', 'total_spent', 'id'])
    .execute();
  // Filters: country, and the (few) affiliates and blacklisted customers, in the default order.
  await db.schema
    .createIndex('customers_shop_country_idx')
    .on('customers')
    .columns(['shop_id', 'country', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('customers_shop_affiliate_idx')
    .on('customers')
    .columns(['shop_id', 'created_at', 'id'])
    .where(sql.ref('is_affiliate'), '=', true)
    .execute();
  await db.schema
    .createIndex('customers_shop_blacklisted_idx')
    .on('customers')
    .columns(['shop_id', 'created_at', 'id'])
    .where(sql.ref('blacklisted'), '=', true)
    .execute();
  await db.schema
    .createIndex('customers_referred_by_idx')
    .on('customers')
    .columns(['referred_by_customer_id'])
    .execute();

  await db.schema
    .createTable('product_serials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shop_id', 'text', (c) => c.notNull().references('shops.id'))
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('variant_id', 'text', (c) => c.references('product_variants.id').onDelete('cascade'))
    .addColumn('serial', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('available')
        .check(sql`status in ('available', 'claimed')`),
    )
    .addColumn('claimed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('product_serials_claimed_at', sql`(status = 'claimed') = (claimed_at is not null)`)
    .execute();
  // Claims take the oldest available serials of a product: this index hands them out in that order.
  await db.schema
    .createIndex('product_serials_available_idx')
    .on('product_serials')
    .columns(['product_id', 'created_at', 'id'])
    .where(sql.ref('status'), '=', 'available')
    .execute();
  await db.schema
    .createIndex('product_serials_shop_product_idx')
    .on('product_serials')
    .columns(['shop_id', 'product_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('product_serials').execute();
  await db.schema.dropTable('customers').execute();
}
