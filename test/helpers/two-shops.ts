// Two shops, A and B, with IDENTICAL data (same titles, slugs, prices, variants, serial values, customer emails,
// affiliate code), each with a full-access key. Tenancy tests use one shop's key with the other shop's ids: since
// everything but the ids is the same, only the shop boundary can make the answer differ.
//
// Adding a resource kind (orders, licenses, webhooks, themes…) when its issue lands:
//   1. add its name to `resourceKinds` (the name test/platform/tenancy.test.ts maps the contract's path parameter to);
//   2. seed it: extend `sameData` if the fixture format (src/ops/fixtures/fixtures.ts) learnt it, or append a step to
//      `seedSteps` that creates the same rows in the shop it is given and returns their ids;
//   3. remove its placeholder from `placeholderIds` in test/platform/tenancy.test.ts.
// createTwoShops() fails when a kind of `resourceKinds` gets no id, so a half-added kind cannot go unnoticed.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { insertAttachment } from '../../db/queries/attachments';
import { insertAuditEntry } from '../../db/queries/audit-entries';
import { insertOwnerAccount, insertOwnerSession } from '../../db/queries/owner-sessions';
import { hashPassword } from '../../src/auth/passwords';
import type { Fixtures } from '../../src/ops/fixtures/fixtures';
import { completeInvoice } from '../../src/domain/orders/completion';
import { createOrder } from '../../src/domain/orders/create-order';
import { createPayment, type PaymentDeps } from '../../src/domain/payments/payments';
import { createWebhook } from '../../src/domain/webhooks/webhooks';
import { startPreview } from '../../src/domain/themes/themes';
import { newId, newUniqid } from '../../src/ids';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import { systemClock } from '../../src/platform/clock';
import { emitEvent } from '../../src/domain/effects';
import { loadSecretBox } from '../../src/platform/secret-box';
import { shopForMode } from '../../src/ops/admin';
import type { TestApp } from './test-app';

/** Every kind of resource the two shops hold, by the name the tenancy walk uses for it. */
export const resourceKinds = [
  /** A SERVICE product with two variants. */
  'product',
  /** A SERIALS product without variants, with three available serials (claimable). */
  'serialProduct',
  /** The first variant of `product`. */
  'variant',
  /** The oldest serial of `serialProduct`. */
  'serial',
  /** A customer who is neither an affiliate nor referred. */
  'customer',
  /** A customer who is an affiliate (code `ADA10`). */
  'affiliate',
  /** A customer referred by `affiliate`. */
  'referredCustomer',
  /** A variant field `Edition` of `product`, without options yet (so orders of `product` need no choice). */
  'variantField',
  /** A quantity deal (uniqid) on `product`: 10% from 3 units (the seeded orders buy 1). */
  'quantityDeal',
  /** A PENDING affiliate application of `customer` (code `CAROL5`): approved by the own-id walk. */
  'affiliateApplication',
  /** A webhook endpoint subscribed to `order:paid`. */
  'webhook',
  /** An `order:paid` event, queued to `webhook`. */
  'event',
  /** The first (PENDING) delivery-log entry of `event` to `webhook`. */
  'webhookLog',
  /** A COMPLETED order of one `product` (Standard, 25.00): refundable, its item fulfillable. */
  'order',
  /** The line item of `order`. */
  'orderItem',
  /** A PENDING order (completed by the own-id walk of completeOrder). */
  'pendingOrder',
  /** Another PENDING order (completed by the own-id walk of fulfillOrder). */
  'fulfillableOrder',
  /** A payment link for a fixed 10.00. */
  'paymentLink',
  /** A PENDING payment (POST /payments, 10.00 USD) by its uniqid. */
  'payment',
  /**
   * The code of a 10% coupon (its "id" in GET /coupons/code/{code}). The code is the one value that differs between
   * the shops (`t` + the end of the shop id), since a code is what addresses the coupon.
   */
  'couponCode',
  /** An ACTIVE monthly subscription of `affiliate` (ada) to the SUBSCRIPTION product `Tenancy Plan`, from a completed order. */
  'subscription',
  /** An ACTIVE license (key `TENANCY-LICENSE-0001`, one device `HW-TENANCY`) of the license product `Tenancy License`. */
  'license',
  /**
   * A SUSPENDED reseller (`carol@example.com`, so no extra customer) in the default tier `Tenancy Tier` (10%) of an
   * enabled program: the own-id walk reinstates it, then suspends it again (routes run in path order).
   */
  'reseller',
  /**
   * A live theme `Tenancy Theme` on the default base with three revisions (the draft is revision 3, the published one
   * revision 2), so the contract's example bodies (`expected_revision: 3`, `revision: 3`) fit it.
   */
  'theme',
  /** A running preview session of `theme` (revision 3): the own-id walk stops it (deletes run last). */
  'previewSession',
  /**
   * A FAILED additional domain `tenancy.example.com` (the same hostname in both shops: only a VERIFIED one is
   * unique across shops). Its verification returns it as it is, without a DNS look-up.
   */
  'domain',
  /**
   * A Telegram bot `@tenancy_bot` with one user, Telegram id `123456789` (the id of the contract's example body of
   * PUT /telegram/bots/{botId}/users/bulk/notifications, which the walk sends).
   */
  'messagingBot',
  /** A NEVER_GENERATED SALES report (CSV): the own-id walk generates it. */
  'report',
  /**
   * A consent-page sign-in session (`cs_…`) of an owner account (`owner-<end of shop id>@example.com`: an owner's
   * email is unique across shops), with its sign-in entry in the audit trail.
   */
  'dashboardSession',
  /** The default reseller tier `Tenancy Tier` of `reseller` (referenced by bodies: tier_id, default_tier_id). */
  'resellerTier',
  /** An attachment `tenancy.txt` (referenced by bodies: the files of an item's fulfillment). */
  'attachment',
  /** The product `Tenancy License` of `license` (a license is validated against its own product). */
  'licenseProduct',
] as const;

export type ResourceKind = (typeof resourceKinds)[number];
export type ShopIds = Readonly<Record<ResourceKind, string>>;

/** The resource kind of each path parameter of the contract, by its components/parameters name. */
export const contractParameterKinds: Readonly<Record<string, ResourceKind>> = {
  ProductId: 'product',
  OrderId: 'order',
  ItemId: 'orderItem',
  CustomerId: 'customer',
  AffiliateCustomerId: 'affiliate',
  AffiliateApplicationId: 'affiliateApplication',
  PaymentLinkId: 'paymentLink',
  PaymentUniqid: 'payment',
  FieldId: 'variantField',
  QuantityDealUniqid: 'quantityDeal',
  SubscriptionId: 'subscription',
  LicenseId: 'license',
  WebhookId: 'webhook',
  WebhookLogId: 'webhookLog',
  EventId: 'event',
  ThemeId: 'theme',
  PreviewSessionId: 'previewSession',
  DomainId: 'domain',
  BotId: 'messagingBot',
  ReportId: 'report',
  SessionId: 'dashboardSession',
  ResellerId: 'reseller',
  CouponCode: 'couponCode',
};

export function isResourceKind(kind: string): kind is ResourceKind {
  return (resourceKinds as readonly string[]).includes(kind);
}

export interface TenantShop {
  /** How the walks name it: `A` and `B`, or `live` and `test` (a live shop and its test twin). */
  label: string;
  shopId: string;
  /** A full-access (`*`) API key of this shop. */
  key: string;
  credentialId: string;
  ids: ShopIds;
}

export interface TwoShops {
  a: TenantShop;
  b: TenantShop;
}

/** The data both shops get, byte for byte (explicit slugs, so no random suffix tells them apart). */
export const sameData: Fixtures = {
  products: [
    {
      title: 'Tenancy Service',
      slug: 'tenancy-service',
      type: 'SERVICE',
      price: '25.00',
      description: 'The same product in two shops.',
      variants: [
        { title: 'Standard', price: '25.00' },
        { title: 'Deluxe', price: '40.00', stock: 5 },
      ],
    },
    {
      title: 'Tenancy Keys',
      slug: 'tenancy-keys',
      type: 'SERIALS',
      price: '9.99',
      serials: ['TENANCY-0001', 'TENANCY-0002', 'TENANCY-0003'],
    },
  ],
  customers: [
    {
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      country: 'GB',
      total_spent: '120.50',
      total_orders: 3,
      wallet_balance: '15.00',
      affiliate: { code: 'ADA10', commission_percent: '12.5', balance: '7.25', lifetime_earnings: '30' },
    },
    { email: 'bob@example.com', name: 'Bob Referred', referred_by: 'ada@example.com' },
    { email: 'carol@example.com', name: 'Carol Plain', country: 'US', wallet_balance: '5.00' },
  ],
  variant_fields: [{ product: 'Tenancy Service', name: 'Edition' }],
  quantity_deals: [
    {
      title: 'Tenancy volume',
      products: ['Tenancy Service'],
      tiers: [{ min_quantity: 3, discount_type: 'PERCENTAGE', discount_value: '10' }],
    },
  ],
  affiliate_applications: [{ email: 'carol@example.com', code: 'CAROL5', note: 'Tenancy applicant' }],
};

/**
 * One seeding step: creates rows in `shopId` (the same rows whichever shop it is given) and returns the ids of the
 * kinds it created. `ids` holds what earlier steps returned, so a step can hang its rows on them.
 */
export type SeedStep = (t: TestApp, shopId: string, ids: Partial<ShopIds>) => Promise<Partial<ShopIds>>;

const catalogAndCustomers: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, sameData);
  const [product, serialProduct] = seeded.products;
  const serial = await t.db
    .selectFrom('product_serials')
    .select('id')
    .where('shop_id', '=', shopId)
    .where('product_id', '=', serialProduct!)
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirstOrThrow();
  const customers = await t.db.selectFrom('customers').select(['id', 'email']).where('shop_id', '=', shopId).execute();
  const byEmail = (email: string) => {
    const row = customers.find((c) => c.email === email);
    if (!row) throw new Error(`two-shops: customer ${email} was not seeded in ${shopId}`);
    return row.id;
  };
  return {
    product,
    serialProduct,
    variant: seeded.variants[0],
    serial: serial.id,
    customer: byEmail('carol@example.com'),
    affiliate: byEmail('ada@example.com'),
    referredCustomer: byEmail('bob@example.com'),
    variantField: seeded.variant_fields[0],
    quantityDeal: seeded.quantity_deals[0],
    affiliateApplication: seeded.affiliateApplications[0],
  };
};

const webhooksAndEvents: SeedStep = async (t, shopId) => {
  const deps = { secrets: await loadSecretBox(t.db, undefined), allowPrivateTargets: true };
  return t.db.transaction().execute(async (trx) => {
    const webhook = await createWebhook(
      shopWrite(trx, shopId, new Effects(), systemClock),
      { url: 'https://hooks.example.com/tenancy', events: ['order:paid'], description: 'tenancy' },
      deps,
    );
    const paid = { uniqid: 'tenancy-order', customer_email: 'ada@example.com', total: 25, currency: 'USD' };
    const { event, attemptIds } = await emitEvent(trx, shopId, 'order:paid', paid, { clock: systemClock });
    return { webhook: webhook.id, event: event.id, webhookLog: attemptIds[0] };
  });
};

const ordersAndLinks: SeedStep = async (t, shopId, ids) => {
  const deps = { checkoutBaseUrl: t.config.checkoutBaseUrl, orderTtlMinutes: 60 };
  return t.db.transaction().execute(async (trx) => {
    // Each domain call is a write of its own in this one transaction, as it was with separate arguments.
    const write = () => shopWrite(trx, shopId, new Effects(), systemClock);
    const order = (email: string) =>
      createOrder(
        write(),
        { email, items: [{ product_id: ids.product!, variant_id: ids.variant!, quantity: 1 }] },
        deps,
      );
    const done = await order('ada@example.com');
    const completed = await completeInvoice(write(), done.id, {}, deps);
    const link = await trx
      .insertInto('payment_links')
      .values({
        id: newId('plk'),
        shop_id: shopId,
        uniqid: newUniqid(),
        title: 'Tenancy link',
        amount: '10.00',
        currency: 'USD',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const payment = await createPayment(
      write(),
      { currency: 'USD' },
      { title: 'Tenancy payment', value: 10, currency: 'USD' },
      { ...deps, publicUrl: t.config.publicUrl } as PaymentDeps,
      { total: '10', gateway: undefined, coin: undefined },
    );
    return {
      order: completed.id,
      orderItem: completed.items[0]!.id,
      pendingOrder: (await order('carol@example.com')).id,
      fulfillableOrder: (await order('bob@example.com')).id,
      paymentLink: link.id,
      payment: payment.uniqid,
    };
  });
};

const coupons: SeedStep = async (t, shopId) => {
  const code = `t${shopId.slice(-12)}`;
  await t.seed(shopId, { coupons: [{ code, type: 'PERCENTAGE', value: '10' }] });
  return { couponCode: code };
};

const subscriptions: SeedStep = async (t, shopId) => {
  const [plan] = (
    await t.seed(shopId, {
      products: [
        {
          title: 'Tenancy Plan',
          slug: 'tenancy-plan',
          type: 'SUBSCRIPTION',
          price: '12.00',
          billing: { interval: 'MONTH' },
        },
      ],
    })
  ).products;
  const deps = { checkoutBaseUrl: t.config.checkoutBaseUrl, orderTtlMinutes: 60 };
  return t.db.transaction().execute(async (trx) => {
    const order = await createOrder(
      shopWrite(trx, shopId, new Effects(), systemClock),
      { email: 'ada@example.com', items: [{ product_id: plan!, quantity: 1 }] },
      deps,
    );
    const completed = await completeInvoice(shopWrite(trx, shopId, new Effects(), systemClock), order.id, {}, deps);
    return { subscription: completed.subscription_id ?? undefined };
  });
};

const licenses: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, {
    products: [
      {
        title: 'Tenancy License',
        slug: 'tenancy-license',
        type: 'SERVICE',
        price: '30.00',
        license_activation_limit: 2,
      },
    ],
    licenses: [
      {
        product: 'Tenancy License',
        key: 'TENANCY-LICENSE-0001',
        customer_email: 'ada@example.com',
        hwids: ['HW-TENANCY'],
        note: 'Tenancy license',
      },
    ],
  });
  return { license: seeded.licenses[0], licenseProduct: seeded.products[0] };
};

const resellers: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, {
    reseller_tiers: [{ name: 'Tenancy Tier', discount_percent: '10', is_default: true }],
    reseller_program: { enabled: true },
    resellers: [{ email: 'carol@example.com', status: 'SUSPENDED' }],
  });
  return { reseller: seeded.resellers[0], resellerTier: seeded.resellerTiers[0] };
};

const messagingBots: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, {
    email_marketing: [{ provider: 'MAILCHIMP', list_id: 'tenancy-list' }],
    messaging_bots: [{ username: 'tenancy_bot', users: [{ telegram_user_id: '123456789' }] }],
  });
  return { messagingBot: seeded.messagingBots[0] };
};

const storeDomains: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, { store_domains: [{ domain: 'tenancy.example.com', status: 'FAILED' }] });
  return { domain: seeded.storeDomains[0] };
};

const analyticsReports: SeedStep = async (t, shopId) => {
  const seeded = await t.seed(shopId, { analytics_reports: [{ name: 'Tenancy sales', type: 'SALES' }] });
  return { report: seeded.analyticsReports[0] };
};

const themes: SeedStep = async (t, shopId) => {
  const page = (title: string) => ({ sections: [{ type: 'hero', title }] });
  const seeded = await t.seed(shopId, {
    themes: [
      {
        name: 'Tenancy Theme',
        base: 'default',
        revisions: [page('First'), page('Second'), page('Third')],
        published_revision: 2,
        live: true,
      },
    ],
  });
  const theme = seeded.themes[0]!;
  const session = await t.db
    .transaction()
    .execute((trx) =>
      startPreview(shopWrite(trx, shopId, new Effects(), systemClock), theme, {}, { publicUrl: t.config.publicUrl }),
    );
  return { theme, previewSession: session.id };
};

const ownerSessions: SeedStep = async (t, shopId) => {
  const ownerId = newId('own');
  const sessionId = newId('cs');
  const passwordHash = await hashPassword('tenancy owner password');
  await t.db.transaction().execute(async (trx) => {
    await insertOwnerAccount(trx, shopId, {
      id: ownerId,
      email: `owner-${shopId.slice(-12)}@example.com`,
      password_hash: passwordHash,
    });
    await insertOwnerSession(trx, shopId, {
      id: sessionId,
      owner_id: ownerId,
      token_hash: randomBytes(32).toString('hex'),
      ip: '203.0.113.7',
      user_agent: 'Tenancy/1.0',
      expires_at: new Date(Date.now() + 3600_000),
    });
    await insertAuditEntry(trx, shopId, {
      id: newId('aud'),
      credential_id: null,
      credential_kind: 'owner',
      owner_id: ownerId,
      session_id: sessionId,
      operation_id: null,
      method: 'POST',
      path: '/oauth/sign-in',
      action: 'oauth.sign_in',
      resource_type: 'owner_session',
      resource_id: sessionId,
      status: 303,
      ip: '203.0.113.7',
      user_agent: 'Tenancy/1.0',
      request_id: 'tenancy-sign-in',
    });
  });
  return { dashboardSession: sessionId };
};

const attachments: SeedStep = async (t, shopId) => {
  const row = await t.db.transaction().execute((trx) =>
    insertAttachment(trx, shopId, {
      id: newId('att'),
      filename: 'tenancy.txt',
      content_type: 'text/plain',
      content: Buffer.from('The same file in two shops.'),
    }),
  );
  return { attachment: row.id };
};

/** Run in order for each shop. Append steps for new resource kinds (see the top of this file). */
export const seedSteps: readonly SeedStep[] = [
  catalogAndCustomers,
  webhooksAndEvents,
  ordersAndLinks,
  coupons,
  subscriptions,
  licenses,
  resellers,
  themes,
  storeDomains,
  messagingBots,
  analyticsReports,
  ownerSessions,
  attachments,
];

/** Seeds `shopId` with every step and gives it a `*` key (of the shop's own mode). */
async function tenantShop(t: TestApp, label: string, shopId: string): Promise<TenantShop> {
  const credential = await t.createKey(shopId, ['*'], `tenancy ${label}`);
  let ids: Partial<ShopIds> = {};
  for (const step of seedSteps) ids = { ...ids, ...(await step(t, shopId, ids)) };
  const missing = resourceKinds.filter((k) => typeof ids[k] !== 'string');
  if (missing.length > 0) {
    throw new Error(`two-shops: no seed step returned an id for ${missing.join(', ')} (add one to seedSteps)`);
  }
  return { label, shopId, key: credential.key, credentialId: credential.id, ids: ids as ShopIds };
}

/** A new live shop, or with mode `test` the test twin of a new live shop. */
const newTenancyShop = (t: TestApp, mode: 'live' | 'test' = 'live') =>
  t.createShop({ name: 'Tenancy Shop', plan: 'free', currency: 'USD', mode });

/**
 * Two tenants seeded with the same data, each with a `*` key. By default shop A and shop B, two live shops;
 * `mode: 'test'` makes them two test-mode shops (test twins), for suites that pay their orders through SANDBOX,
 * which only test mode offers. With `b: 'test twin'`: a live shop (labelled `live`) and its own test twin (`test`,
 * a test key `mdk_test_…`), the two modes of one merchant, which must stay as far apart as two shops (issue 26).
 */
export async function createTwoShops(
  t: TestApp,
  options: { b?: 'another shop' | 'test twin'; mode?: 'live' | 'test' } = {},
): Promise<TwoShops> {
  const twin = options.b === 'test twin';
  const aId = await newTenancyShop(t, twin ? 'live' : options.mode);
  const a = await tenantShop(t, twin ? 'live' : 'A', aId);
  const bId = twin ? (await shopForMode(t.db, aId, 'test')).id : await newTenancyShop(t, options.mode);
  const b = await tenantShop(t, twin ? 'test' : 'B', bId);
  for (const kind of resourceKinds) {
    if (a.ids[kind] === b.ids[kind]) throw new Error(`two-shops: A and B share the ${kind} id ${a.ids[kind]}`);
  }
  return { a, b };
}

/**
 * The shop's rows with their ids and shop ids left out, as comparable text per table: equal for A and B when they
 * hold the same data. (Ids, foreign keys to the shop's own rows, generated uniqids/wallet ids and times differ.)
 */
export async function shopDataShape(t: TestApp, shopId: string): Promise<Record<string, string[]>> {
  const shape = async (table: string, columns: string[]) => {
    const r = await sql<{ row: string }>`select ${sql.raw(columns.join(" || '|' || "))} as row from ${sql.table(
      table,
    )} where shop_id = ${shopId} order by 1`.execute(t.db);
    return r.rows.map((x) => x.row);
  };
  return {
    products: await shape('products', ['title', 'slug', 'type', 'price::text', 'stock::text']),
    product_variants: await shape('product_variants', ['title', 'price::text', 'stock::text']),
    product_serials: await shape('product_serials', ['serial', 'status']),
    customers: await shape('customers', [
      'email',
      "coalesce(name, '')",
      'is_affiliate::text',
      "coalesce(affiliate_code, '')",
      'wallet_balance::text',
      '(referred_by_customer_id is not null)::text',
    ]),
    affiliate_applications: await shape('affiliate_applications', [
      'status',
      "coalesce(requested_code, '')",
      'commission_percent::text',
      "coalesce(note, '')",
    ]),
  };
}
