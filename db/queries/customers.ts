// Customers of a shop (with their wallet and affiliate columns) and their computed figures.
import { CompiledQuery, sql, type Transaction } from 'kysely';
import type { CustomerFigures, CustomerRow, Database } from '../tables';
import { blacklistMatches } from './blacklist';
import { chunks, insertChunkRows } from './chunks';
import { activeResellerByEmailQuery } from './resellers';
import { applyKeyset, keysetParameters, keysetShape, type Keyset } from './keyset';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';
import { addRowValues, definedColumns, prepareByShape, rowPlaceholders } from './prepared';

/** A customer with the figures computed from its paid orders, refunds and the shop's blacklist. */
export type CustomerAccountRow = CustomerRow & CustomerFigures;
export type CustomerPageRow = CustomerAccountRow & { cursor_value: string };

/**
 * The customer's figures, derived in SQL (never stored, so they cannot drift): `total_spent` is the sum of
 * `total - refunded` over the customer's paid orders (`completed_at` set, whatever their status since), in the
 * orders' own amounts; `total_orders` counts those orders; `blacklisted` says whether an EMAIL, EMAIL_DOMAIN or
 * COUNTRY entry of the shop's blacklist matches the customer. Correlated on the `customers` row of the query, and
 * on its shop.
 */
const figures = {
  total_spent: sql<string>`coalesce((select sum(o.total - o.refunded) from orders o
    where o.shop_id = customers.shop_id and o.customer_id = customers.id and o.completed_at is not null), 0)::numeric(20, 8)`,
  total_orders: sql<number>`(select count(*) from orders o
    where o.shop_id = customers.shop_id and o.customer_id = customers.id and o.completed_at is not null)::integer`,
  blacklisted: sql<boolean>`exists (select 1 from blacklist_entries b where b.shop_id = customers.shop_id and (
    (b.type = 'EMAIL' and b.value = customers.email collate "C")
    or (b.type = 'EMAIL_DOMAIN' and b.value = split_part(customers.email, '@', 2) collate "C")
    or (b.type = 'COUNTRY' and b.value = customers.country collate "C")))`,
};

/** The shop's customers with their figures, as a query other queries can read from. */
function customerAccounts(db: ReadDb, shopId: string) {
  return inShop(db, shopId)
    .selectFrom('customers')
    .selectAll('customers')
    .select([
      figures.total_spent.as('total_spent'),
      figures.total_orders.as('total_orders'),
      figures.blacklisted.as('blacklisted'),
    ]);
}

const compiledPages = new Map<string, string>();

/**
 * One keyset page of a shop's customers with their figures: `limit + 1` rows matching the keyset's filters, in its
 * order. The figures are columns of a derived table, so filters and sorts on them (`blacklisted`, `min_total_spent`,
 * `total_spent`) work like any column; the planner pulls the derived table up, so a page in a column's order is
 * still that column's index range, with the figures computed for the page's rows only. Sorting or filtering on a
 * figure computes it for every customer of the shop (one index look-up in orders_shop_customer_paid_idx each).
 * Compiled once per keyset shape, like pageOf (shop-rows.ts).
 */
export async function customersPage(db: ReadDb, shopId: string, keyset: Keyset): Promise<CustomerPageRow[]> {
  const shape = keysetShape(keyset);
  const values = [shopId, ...keysetParameters(keyset)];
  let text = compiledPages.get(shape);
  if (text === undefined) {
    const query = applyKeyset(
      db.selectFrom(customerAccounts(db, shopId).as('customers')).selectAll(),
      keyset,
    ).compile();
    if (query.parameters.length !== values.length || query.parameters.some((p, i) => p !== values[i])) {
      throw new Error("customersPage: the page query's parameters are not in the expected order");
    }
    text = query.sql;
    compiledPages.set(shape, text);
  }
  return (await db.executeQuery<CustomerPageRow>(CompiledQuery.raw(text, values))).rows;
}

/** The shop's customer with this id and its figures, or undefined (another shop's customer is not found). */
export async function customerById(db: ReadDb, shopId: string, id: string): Promise<CustomerAccountRow | undefined> {
  return customerAccounts(db, shopId).where('customers.id', '=', id).executeTakeFirst();
}

/** The figures of the shop's customer with this id (undefined when there is none). */
export async function customerFigures(db: ReadDb, shopId: string, id: string): Promise<CustomerFigures | undefined> {
  return inShop(db, shopId)
    .selectFrom('customers')
    .select([
      figures.total_spent.as('total_spent'),
      figures.total_orders.as('total_orders'),
      figures.blacklisted.as('blacklisted'),
    ])
    .where('customers.id', '=', id)
    .executeTakeFirst();
}

/** How many customers of the shop the given affiliate referred. */
export async function referredCustomerCount(db: ReadDb, shopId: string, affiliateId: string): Promise<number> {
  const row = await inShop(db, shopId)
    .selectFrom('customers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('referred_by_customer_id', '=', affiliateId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export type NewCustomer = ShopRow<'customers'>;

export async function insertCustomers(
  trx: Transaction<Database>,
  shopId: string,
  rows: NewCustomer[],
): Promise<CustomerRow[]> {
  const inserted: CustomerRow[] = [];
  // In chunks: one INSERT may bind at most 65,535 parameters.
  for (const chunk of chunks(rows, insertChunkRows)) {
    inserted.push(...(await inShopForWrite(trx, shopId).insertInto('customers', chunk).returningAll().execute()));
  }
  return inserted;
}

export async function setReferrer(
  trx: Transaction<Database>,
  shopId: string,
  customerId: string,
  referrerId: string,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('customers')
    .set({ referred_by_customer_id: referrerId })
    .where('id', '=', customerId)
    .execute();
}

/** The shop's customer with this (lower-cased) email, locked for the transaction. */
export async function customerByEmailForUpdate(
  trx: Transaction<Database>,
  shopId: string,
  email: string,
): Promise<CustomerRow | undefined> {
  return inShop(trx, shopId)
    .selectFrom('customers')
    .selectAll()
    .where('email', '=', email)
    .forUpdate()
    .executeTakeFirst();
}

/** What a write learns of its buyer in the statement that finds or creates it (`upsertBuyer`). */
export interface BuyerUpsert {
  customer: CustomerAccountRow;
  /** The row was made by this statement. */
  created: boolean;
  /** An entry of the shop's blacklist matches the buyer (when `blacklist` was asked). */
  blocked: boolean;
  /** The buyer's ACTIVE reseller and its tier percent (when `reseller` was asked). */
  reseller: { id: string; tier_discount_percent: string } | undefined;
}

/**
 * The customer with this email, created from `row` when there is none, in one statement: inserted, or else the
 * existing row locked (`on conflict … do update`, which also finds a row another transaction has just committed),
 * returned with its figures and, as asked, whether the blacklist matches the buyer (`country` null: the customer's
 * own; `ip` null: none sent) and the buyer's ACTIVE reseller (held FOR SHARE).
 */
export async function upsertBuyer(
  trx: Transaction<Database>,
  shopId: string,
  row: NewCustomer,
  ask: { blacklist?: { country: string | null; ip: string | null }; reseller?: boolean },
): Promise<BuyerUpsert> {
  const shape = {
    columns: definedColumns(row),
    blacklist: ask.blacklist ? (ask.blacklist.ip === null ? 'without-ip' : 'with-ip') : 'no',
    reseller: ask.reseller === true,
  } as const;
  const rows = await buyerUpsert(
    trx,
    shape,
    addRowValues({ $shop: shopId, $country: ask.blacklist?.country ?? null, $ip: ask.blacklist?.ip ?? null }, row),
  );
  const found = rows[0];
  if (!found) throw new Error(`customer ${row.email} vanished between insert and read`);
  const { buyer_blocked, reseller_id, reseller_percent, ...customer } = found;
  return {
    customer,
    created: customer.id === row.id,
    blocked: buyer_blocked,
    reseller: reseller_id === null ? undefined : { id: reseller_id, tier_discount_percent: reseller_percent! },
  };
}

// Run by every order (its buyer), so compiled once per shape: which columns the new row has, and what is asked.
const buyerUpsert = prepareByShape(
  (db, p, shape: { columns: string[]; blacklist: 'no' | 'without-ip' | 'with-ip'; reseller: boolean }) => {
    const upsert = inShopForWrite(db as Transaction<Database>, p('$shop'))
      .insertInto('customers', rowPlaceholders<NewCustomer>(p, shape.columns))
      .onConflict((oc) => oc.columns(['shop_id', 'email']).doUpdateSet((eb) => ({ email: eb.ref('excluded.email') })))
      .returningAll();
    const blocked =
      shape.blacklist === 'no'
        ? sql<boolean>`false`
        : sql<boolean>`exists (select 1 from blacklist_entries where shop_id = customers.shop_id and ${blacklistMatches(
            {
              email: sql`customers.email`,
              country: sql`upper(coalesce(${p('$country')}::text, customers.country))`,
              ip: shape.blacklist === 'with-ip' ? p('$ip') : null,
            },
          )})`;
    const reseller = shape.reseller
      ? sql`left join lateral (${activeResellerByEmailQuery(db, p('$shop'), p('email'))}) reseller on true`
      : sql`left join lateral (select null::text as id, null::numeric as tier_discount_percent) reseller on true`;
    return sql<
      CustomerAccountRow & { buyer_blocked: boolean; reseller_id: string | null; reseller_percent: string | null }
    >`
      with customers as (${upsert})
      select customers.*, ${figures.total_spent} as total_spent, ${figures.total_orders} as total_orders,
        ${figures.blacklisted} as blacklisted, ${blocked} as buyer_blocked,
        reseller.id as reseller_id, reseller.tier_discount_percent as reseller_percent
      from customers ${reseller}`;
  },
);

/** Inserts the customer unless the email is taken (a concurrent order created it); returns the row if inserted. */
export async function insertCustomerIfAbsent(
  trx: Transaction<Database>,
  shopId: string,
  row: NewCustomer,
): Promise<CustomerRow | undefined> {
  return inShopForWrite(trx, shopId)
    .insertInto('customers', row)
    .onConflict((oc) => oc.columns(['shop_id', 'email']).doNothing())
    .returningAll()
    .executeTakeFirst();
}
