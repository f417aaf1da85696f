// The buyer of an invoice, however it is created (POST /orders, POST /payments, a payment link, the checkout asking
// for an email): found or created as the shop's customer by email, and refused when the shop's blacklist matches.
import type { CustomerRow } from '../../../db/tables';
import { ValidationError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { customerView } from '../../views/customer';
import { canonicalIp, refuseBlacklistedBuyer } from './blacklist';
import { customerForEmail } from './customers';

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
  if (facts.ipAddress !== undefined && canonicalIp(facts.ipAddress) === null)
    throw new ValidationError([{ field: 'ip_address', message: 'must be an IPv4 or IPv6 address' }]);
  const { customer, created } = await customerForEmail(w, shop, facts.email);
  await refuseBlacklistedBuyer(w.trx, w.shopId, {
    email: facts.email,
    country: facts.country ?? customer.country,
    ip: facts.ipAddress ?? null,
  });
  if (created) w.effects.emit('customer:created', customerView(customer, { referredCustomers: 0 }));
  return customer;
}
