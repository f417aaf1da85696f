// Additional storefront domains and their DNS verification.
//
// Adding a hostname (plan feature `customDomains`, else 400 FEATURE_NOT_AVAILABLE) stores it PENDING_VERIFICATION
// with a TXT record to publish: name `_mdapi-verification.<hostname>`, value `mdapi-verification=<token>` where the
// token is 24 random bytes (base64url), so no one can publish a shop's value before the shop has been shown it.
// Duplicates (decided as Stripe would and documented in openapi.yaml), 409 CONFLICT:
//   - the hostname is already in this shop (PENDING_VERIFICATION or VERIFIED);
//   - the hostname is VERIFIED by another shop (pending rows of other shops do not block: whoever proves control
//     of the DNS wins, so nobody can squat a hostname by adding it first).
// A hostname this shop has FAILED is added again as a new domain (new id, new token, a new 72-hour window); the
// FAILED row is removed.
//
// Verification (`POST …/{id}/verification`) moves a PENDING_VERIFICATION domain only:
//   record found                                  -> VERIFIED (verified_at), ssl_status stays PENDING until the
//                                                    storefront edge issues the certificate (outside this API)
//   DNS answered, no such record, < 72 h old      -> stays PENDING_VERIFICATION, last_check_error RECORD_NOT_FOUND
//   DNS answered, no such record, >= 72 h old     -> FAILED, ssl_status FAILED
//   DNS did not answer (timeout, SERVFAIL, ...)   -> stays PENDING_VERIFICATION, last_check_error DNS_UNAVAILABLE,
//                                                    whatever its age: an unreachable resolver says nothing about
//                                                    the domain
// A VERIFIED or FAILED domain is returned as it is, without a look-up. Age is measured from `created_at` to the
// write's instant (its clock, read when the write began). Found but VERIFIED by another shop in the meantime: 409
// CONFLICT, nothing recorded.
//
// The look-up runs inside the write's unit of work (operations get their transaction before the handler runs),
// but holds no lock while it waits: the row is read without FOR UPDATE, the DNS is asked (bounded by
// DNS_TIMEOUT_MS, 3 s by default), and the outcome is written by one conditional UPDATE (`status =
// 'PENDING_VERIFICATION'`): a check that lost a race to another changes nothing and returns the row as it is.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import * as domains from '../../../db/queries/store-domains';
import type { StoreDomainRow } from '../../../db/tables';
import type { Plan } from '../../config';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { storeDomainView, type StoreDomainView } from '../../views/store';
import { requireFeature } from '../account/plans';
import { lookUpTxt, type DnsOptions } from './dns';

/** How long a domain may stay unverified before a check that finds no record fails it. */
export const VERIFICATION_WINDOW_MS = 72 * 60 * 60 * 1000;

export const RECORD_PREFIX = '_mdapi-verification';
export const VALUE_PREFIX = 'mdapi-verification=';

/** `GET /store/domains/additional`: newest first; no filters or sorts. */
export const storeDomainList: ListSpec = {
  name: 'store_domains',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const storeDomainCursorList: CursorList<domains.StoreDomainPageRow, StoreDomainView> = {
  spec: storeDomainList,
  page: domains.storeDomainsPage,
  view: (rows) => rows.map(storeDomainView),
};

const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** The hostname as stored (lower case, no final dot), or the reason it cannot be a storefront domain. */
export function normaliseHostname(input: string): { domain: string } | { problem: string } {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  if (domain.length === 0 || domain.length > 253) return { problem: 'must be a hostname of 1 to 253 characters' };
  if (isIP(domain) !== 0) return { problem: 'must be a hostname, not an IP address' };
  const labels = domain.split('.');
  if (labels.length < 2) return { problem: 'must have at least two labels (e.g. shop.example.com)' };
  if (!labels.every((l) => label.test(l)))
    return { problem: 'must be letters, digits and hyphens, in labels of 1 to 63 characters' };
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return { problem: 'must end in a top-level domain' };
  if (domain === 'localhost' || domain.endsWith('.localhost')) return { problem: 'must be a public hostname' };
  return { domain };
}

/** A fresh verification record for `domain`. */
export function newVerificationRecord(domain: string): { record_name: string; record_value: string } {
  return {
    record_name: `${RECORD_PREFIX}.${domain}`,
    record_value: `${VALUE_PREFIX}${randomBytes(24).toString('base64url')}`,
  };
}

/** The rows to add a hostname to a shop, after the duplicate rules (see the top of this file). */
async function admit({ trx, shopId }: ShopWrite, domain: string): Promise<void> {
  const own = await domains.storeDomainByName(trx, shopId, domain);
  if (own && own.status !== 'FAILED')
    throw new ApiError('CONFLICT', `This shop already has the domain ${domain} (${own.id}, ${own.status}).`, {
      details: [{ field: 'domain', message: 'is already added to this shop' }],
    });
  if (await domains.domainVerifiedByAnotherShop(trx, shopId, domain))
    throw new ApiError('CONFLICT', `The domain ${domain} is already verified by another shop.`, {
      details: [{ field: 'domain', message: 'is verified by another shop' }],
    });
  if (own) await domains.deleteFailedStoreDomain(trx, shopId, domain);
}

/** POST /store/domains/additional. */
export async function addDomain(
  w: ShopWrite,
  shop: { plan: Plan },
  input: { domain: string },
): Promise<StoreDomainView> {
  const { trx, shopId, effects, now } = w;
  requireFeature(shop.plan, 'customDomains');
  const normal = normaliseHostname(input.domain);
  if ('problem' in normal) throw new ValidationError([{ field: 'domain', message: normal.problem }]);
  await admit(w, normal.domain);
  const row = await domains.insertStoreDomain(trx, shopId, {
    id: newId('dom'),
    domain: normal.domain,
    status: 'PENDING_VERIFICATION',
    ssl_status: 'PENDING',
    ...newVerificationRecord(normal.domain),
    created_at: now,
    updated_at: now,
  });
  effects.audit({
    action: 'store_domain.added',
    resourceType: 'store_domain',
    resourceId: row.id,
    detail: { domain: row.domain },
  });
  return storeDomainView(row);
}

export interface VerifyDomainDeps {
  dns: DnsOptions;
}

/** The outcome of a look-up for a PENDING_VERIFICATION domain checked at `now`. */
export function checkOutcome(
  row: Pick<StoreDomainRow, 'created_at'>,
  lookup: 'found' | 'not_found' | 'unavailable',
  now: Date,
): domains.DomainCheckOutcome {
  if (lookup === 'found') return { status: 'VERIFIED' };
  if (lookup === 'unavailable') return { status: 'PENDING_VERIFICATION', error: 'DNS_UNAVAILABLE' };
  return now.getTime() - row.created_at.getTime() >= VERIFICATION_WINDOW_MS
    ? { status: 'FAILED', error: 'RECORD_NOT_FOUND' }
    : { status: 'PENDING_VERIFICATION', error: 'RECORD_NOT_FOUND' };
}

/** POST /store/domains/additional/{id}/verification. */
export async function verifyDomain(w: ShopWrite, id: string, deps: VerifyDomainDeps): Promise<StoreDomainView> {
  const { trx, shopId, effects, now } = w;
  const row = await domains.storeDomainById(trx, shopId, id);
  if (!row) throw new NotFoundError('DOMAIN_NOT_FOUND');
  if (row.status !== 'PENDING_VERIFICATION') return storeDomainView(row);
  const lookup = await lookUpTxt(row.record_name, row.record_value, deps.dns);
  const outcome = checkOutcome(row, lookup, now);
  if (outcome.status === 'VERIFIED' && (await domains.domainVerifiedByAnotherShop(trx, shopId, row.domain)))
    throw new ApiError('CONFLICT', `The domain ${row.domain} is already verified by another shop.`);
  const updated = await domains.recordDomainCheck(trx, shopId, id, outcome, now);
  if (!updated) {
    // Another check moved it first: answer with what it is now.
    const current = await domains.storeDomainById(trx, shopId, id);
    if (!current) throw new NotFoundError('DOMAIN_NOT_FOUND');
    return storeDomainView(current);
  }
  effects.audit({
    action: 'store_domain.checked',
    resourceType: 'store_domain',
    resourceId: id,
    detail: { lookup, status: updated.status },
  });
  return storeDomainView(updated);
}

export interface DomainFixture {
  domain: string;
  status?: 'PENDING_VERIFICATION' | 'VERIFIED' | 'FAILED';
  /** ISO 8601; default: now. */
  created_at?: string;
}

/** Fixtures: domains as they stand (no look-up); the duplicate rules hold as for the API. */
export async function seedDomainFixtures(
  w: ShopWrite,
  fixtures: readonly DomainFixture[],
  fail: (message: string) => Error,
): Promise<string[]> {
  const { trx, shopId, now } = w;
  const ids: string[] = [];
  for (const [i, f] of fixtures.entries()) {
    const normal = normaliseHostname(f.domain);
    if ('problem' in normal) throw fail(`/store_domains/${i}/domain ${normal.problem}`);
    if (await domains.storeDomainByName(trx, shopId, normal.domain))
      throw fail(`/store_domains/${i}/domain ${normal.domain} is already added to this shop`);
    const status = f.status ?? 'PENDING_VERIFICATION';
    if (status === 'VERIFIED' && (await domains.domainVerifiedByAnotherShop(trx, shopId, normal.domain)))
      throw fail(`/store_domains/${i}/domain ${normal.domain} is already verified by another shop`);
    const createdAt = f.created_at ? new Date(f.created_at) : now;
    const row = await domains.insertStoreDomain(trx, shopId, {
      id: newId('dom'),
      domain: normal.domain,
      status,
      ssl_status: status === 'FAILED' ? 'FAILED' : 'PENDING',
      ...newVerificationRecord(normal.domain),
      verified_at: status === 'VERIFIED' ? createdAt : null,
      created_at: createdAt,
      updated_at: createdAt,
    });
    ids.push(row.id);
  }
  return ids;
}
