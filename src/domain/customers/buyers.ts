// The buyer of an invoice, however it is created (POST /orders, POST /payments, a payment link, the checkout asking
// for an email): found or created as the shop's customer by email, and refused when the shop's blacklist matches.
import type { Transaction } from 'kysely';
import type { CustomerRow, Database } from '../../../db/tables';
import { ValidationError } from '../../errors';
import type { Effects } from '../../platform/unit-of-work';
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
export async function admitBuyer(
  trx: Transaction<Database>,
  shop: { id: string; currency: string },
  facts: BuyerFacts,
  effects: Effects,
): Promise<CustomerRow> {
  if (facts.ipAddress !== undefined && canonicalIp(facts.ipAddress) === null)
    throw new ValidationError([{ field: 'ip_address', message: 'must be an IPv4 or IPv6 address' }]);
  const { customer, created } = await customerForEmail(trx, shop, facts.email);
  await refuseBlacklistedBuyer(trx, shop.id, {
    email: facts.email,
    country: facts.country ?? customer.country,
    ip: facts.ipAddress ?? null,
  });
  if (created) effects.emit('customer:created', customerView(customer, { referredCustomers: 0 }));
  return customer;
}
