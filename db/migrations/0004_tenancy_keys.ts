// Tenancy the database enforces: every shop-owned table gets a unique (shop_id, id), and every reference between
// shop-owned rows becomes a composite foreign key (shop_id, x_id) -> (shop_id, id). A row can then only point at a
// row of its own shop, whatever the code does: a cross-shop link is refused by PostgreSQL (23503), and the API
// answers it as a reference to something that does not exist. New tables follow the same rule; test/platform/tenancy.test.ts
// checks the catalog so one that does not fails.
import { sql, type Kysely } from 'kysely';

const shopOwned = ['credentials', 'products', 'product_variants', 'customers', 'product_serials'];

const relinks: { table: string; old: string; name: string; columns: string; references: string; onDelete?: string }[] =
  [
    {
      table: 'product_variants',
      old: 'product_variants_product_id_fkey',
      name: 'product_variants_product_fkey',
      columns: 'shop_id, product_id',
      references: 'products (shop_id, id)',
      onDelete: 'cascade',
    },
    {
      table: 'product_serials',
      old: 'product_serials_product_id_fkey',
      name: 'product_serials_product_fkey',
      columns: 'shop_id, product_id',
      references: 'products (shop_id, id)',
      onDelete: 'cascade',
    },
    {
      table: 'product_serials',
      old: 'product_serials_variant_id_fkey',
      name: 'product_serials_variant_fkey',
      columns: 'shop_id, variant_id',
      references: 'product_variants (shop_id, id)',
      onDelete: 'cascade',
    },
    {
      table: 'customers',
      old: 'customers_referred_by_customer_id_fkey',
      name: 'customers_referred_by_fkey',
      columns: 'shop_id, referred_by_customer_id',
      references: 'customers (shop_id, id)',
    },
  ];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of shopOwned) {
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_shop_id_id_key`)} unique (shop_id, id)`.execute(
      db,
    );
  }
  for (const r of relinks) {
    await sql`alter table ${sql.table(r.table)} drop constraint ${sql.id(r.old)}`.execute(db);
    await sql`alter table ${sql.table(r.table)} add constraint ${sql.id(r.name)} foreign key (${sql.raw(r.columns)})
      references ${sql.raw(r.references)}${sql.raw(r.onDelete ? ` on delete ${r.onDelete}` : '')}`.execute(db);
  }
  // The composite keys are looked up by (shop_id, x_id) on every delete of a parent: index them.
  await sql`create index product_serials_shop_variant_idx on product_serials (shop_id, variant_id) where variant_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index product_serials_shop_variant_idx`.execute(db);
  for (const r of [...relinks].reverse()) {
    const column = r.columns.split(', ')[1]!;
    const target = r.references.split(' ')[0]!;
    await sql`alter table ${sql.table(r.table)} drop constraint ${sql.id(r.name)}`.execute(db);
    await sql`alter table ${sql.table(r.table)} add constraint ${sql.id(r.old)} foreign key (${sql.id(column)})
      references ${sql.table(target)} (id)${sql.raw(r.onDelete ? ` on delete ${r.onDelete}` : '')}`.execute(db);
  }
  for (const table of [...shopOwned].reverse()) {
    await sql`alter table ${sql.table(table)} drop constraint ${sql.id(`${table}_shop_id_id_key`)}`.execute(db);
  }
}
