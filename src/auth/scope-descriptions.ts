// What each scope lets an app do, in the words the consent page shows the shop owner. One place for every scope the
// contract names (src/generated/operations.ts); test/account/oauth-consent.test.ts fails when a scope has no line here.
export const scopeDescriptions: Readonly<Record<string, string>> = {
  '*': 'Full access: read and change everything in your shop, including creating further app authorizations.',
  'affiliates.read': 'See your affiliates, their customers and their performance.',
  'affiliates.write': 'Approve affiliate applications and convert affiliate balances.',
  'analytics.read': 'See your analytics reports.',
  'analytics.write': 'Generate analytics reports.',
  'apps.write': 'Authorize apps on your behalf.',
  'coupons.read': 'See your coupons and check coupon codes.',
  'customers.read': 'See your customers, their details and order history.',
  'customers.write': 'Change your customers, including crediting and debiting their wallets.',
  'disputes.read': 'See payment disputes.',
  'email_marketing.read': 'See your email marketing settings.',
  'licenses.read': 'See your software licenses and their keys (on orders too), and validate license keys.',
  'licenses.write': 'Create, change and delete software licenses.',
  'messaging.write': 'Change the notifications of your messaging bots.',
  'orders.read': 'See your orders and invoices, with buyer emails and amounts.',
  'orders.write': 'Create, complete, fulfil and refund orders.',
  'payment_links.write': 'Create payment links and turn them on or off.',
  'payments.read': 'See your payments (amount, status, checkout address) and their events.',
  'payments.write': 'Start payments of invoices.',
  'products.read': 'See your products, variants, add-ons and stock.',
  'products.write': 'Create and change products, and claim product serials.',
  'resellers.read': 'See your reseller program, tiers and resellers.',
  'resellers.write': 'Change your reseller program and invite, suspend or reinstate resellers.',
  'reviews.read': 'See the reviews of your products.',
  'security.read': "See your shop's audit trail and sign-in sessions.",
  'security.write': 'Sign you out of your sessions on this approval page (to end a session left open elsewhere).',
  'store.read': "See your storefront's branding, layout and domains.",
  'store.write': "Change your storefront's branding, layout and domains.",
  'subscriptions.read': 'See subscriptions to your products.',
  'subscriptions.write': 'Pause, resume and change subscriptions.',
  'themes.read': 'See your storefront themes.',
  'themes.write': 'Create, edit, preview and publish storefront themes.',
  'tickets.read': 'See support tickets.',
  'webhooks.read':
    'See your webhook endpoints and their delivery logs, and the events of what the other permissions let it see.',
  'webhooks.write':
    'Create, change and delete webhook endpoints and retry deliveries: the endpoints it adds receive the events they subscribe to.',
};

/** The description of a scope (a scope the contract names always has one; anything else is shown as is). */
export function describeScope(scope: string): string {
  return Object.hasOwn(scopeDescriptions, scope) ? scopeDescriptions[scope]! : scope;
}
