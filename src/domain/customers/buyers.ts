// The buyer of an invoice, however it is created (POST /orders, POST /payments, a payment link, the checkout asking
// for an email): found or created as the shop's customer by email, and refused when the shop's blacklist matches.
import type { CustomerRow } from '../../../db/tables';
import { ValidationError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { customerView } from '../../views/customer';
import { upsertBuyer, type BuyerUpsert } from '../../../db/queries/customers';
import { buyerBlocked, canonicalIp } from './blacklist';
import { newCustomerRow } from './customers';

export interface BuyerFacts {
  email: string;
  /** The country the integration sent; else the customer's stored one is checked. */
  country?: string;
  /** The buyer's address: sent by the integration, or the browser's on the hosted pages. */
  ipAddress?: string;
}

/**
 * The customer with this email, created (and announced) when new. A buyer the shop's blacklist matches (email,
 * email domain, the country sent or else the customer's, the IP address) may not buy (src/domain/customers/blacklist.ts);
 * the refusal rolls back the customer row it may have created.
 */
export async function admitBuyer(w: ShopWrite, shop: { currency: string }, facts: BuyerFacts): Promise<CustomerRow> {
  return (await admitOrderBuyer(w, shop, facts, { reseller: false })).customer;
}

/**
 * `admitBuyer`, and with `reseller` the buyer's ACTIVE reseller (what src/domain/resellers prices a wholesale order
 * with), found by the same statement: an order learns all it needs of its buyer in one round trip.
 */
export async function admitOrderBuyer(
  w: ShopWrite,
  shop: { currency: string },
  facts: BuyerFacts,
  ask: { reseller: boolean },
): Promise<{ customer: CustomerRow; reseller: BuyerUpsert['reseller'] }> {
  const ip = facts.ipAddress === undefined ? null : canonicalIp(facts.ipAddress);
  if (facts.ipAddress !== undefined && ip === null)
    throw new ValidationError([{ field: 'ip_address', message: 'must be an IPv4 or IPv6 address' }]);
  const found = await upsertBuyer(w.trx, w.shopId, newCustomerRow(shop, { email: facts.email }, w.now), {
    blacklist: { country: facts.country ?? null, ip },
    reseller: ask.reseller,
  });
  if (found.blocked) throw buyerBlocked();
  if (found.created) w.effects.emit('customer:created', customerView(found.customer, { referredCustomers: 0 }));
  return { customer: found.customer, reseller: found.reseller };
}
