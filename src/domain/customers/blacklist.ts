// The shop's blacklist: which buyers may not order. An entry is an email, an email domain, an IP address or range,
// or a country. POST /orders refuses a buyer any entry matches (BUYER_BLOCKED); a customer's `blacklisted` is
// computed from the same entries (db/queries/customers.ts), so the two cannot disagree. Entries are written by the
// operator (`cli blacklist add`) and by fixtures; the API lists them (GET /blacklist).
import ipaddr from 'ipaddr.js';
import * as blacklist from '../../../db/queries/blacklist';
import type { BlacklistEntryRow, BlacklistEntryType } from '../../../db/tables';
import { ApiError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { blacklistEntryView } from '../../views/blacklist-entry';

export const blacklistEntryTypes: readonly BlacklistEntryType[] = ['EMAIL', 'EMAIL_DOMAIN', 'IP', 'COUNTRY'];

/** `GET /blacklist`: newest first; no filters or sorts. */
export const blacklistList: ListSpec = {
  name: 'blacklist',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const blacklistCursorList: CursorList<blacklist.BlacklistPageRow, ReturnType<typeof blacklistEntryView>> = {
  spec: blacklistList,
  page: blacklist.blacklistPage,
  view: (rows) => rows.map(blacklistEntryView),
};

const emailPattern = /^[^\s@,]+@([a-z0-9-]+\.)+[a-z0-9-]+$/;
const domainPattern = /^([a-z0-9-]+\.)+[a-z0-9-]+$/;

/** An IP address in its canonical text (IPv4-mapped IPv6 as IPv4), or null when the text is not one. */
export function canonicalIp(text: string): string | null {
  if (!ipaddr.isValid(text)) return null;
  return ipaddr.process(text).toString();
}

/** An address or CIDR range as PostgreSQL prints the network (a full-length prefix is the plain address). */
function canonicalNetwork(text: string): string | null {
  if (!text.includes('/')) return canonicalIp(text);
  if (!ipaddr.isValidCIDR(text)) return null;
  const [address, prefix] = ipaddr.parseCIDR(text);
  const bits = address.kind() === 'ipv4' ? 32 : 128;
  if (prefix === bits) return address.toString();
  const network =
    address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(text) : ipaddr.IPv6.networkAddressFromCIDR(text);
  return `${network.toString()}/${prefix}`;
}

export interface NewBlacklistEntry {
  type: string;
  value: string;
  note?: string | null;
}

/** The normalised value of an entry, or a message saying why the value is not one of its type. */
export function normaliseEntry(type: string, value: string): { type: BlacklistEntryType; value: string } | string {
  const v = value.trim();
  switch (type) {
    case 'EMAIL':
      return emailPattern.test(v.toLowerCase()) && v.length <= 254
        ? { type, value: v.toLowerCase() }
        : 'must be an email address';
    case 'EMAIL_DOMAIN': {
      const d = v.toLowerCase().replace(/^@/, '');
      return domainPattern.test(d) && d.length <= 253 ? { type, value: d } : 'must be a domain such as example.com';
    }
    case 'IP': {
      const n = canonicalNetwork(v);
      return n === null ? 'must be an IPv4 or IPv6 address or CIDR range' : { type, value: n };
    }
    case 'COUNTRY':
      return /^[A-Za-z]{2}$/.test(v) ? { type, value: v.toUpperCase() } : 'must be an ISO 3166-1 alpha-2 country code';
    default:
      return `type must be one of ${blacklistEntryTypes.join(', ')}`;
  }
}

/** Adds entries to the shop's blacklist (an entry it already has is kept as it is); invalid ones are a 422. */
export async function addBlacklistEntries(
  w: ShopWrite,
  entries: readonly NewBlacklistEntry[],
): Promise<BlacklistEntryRow[]> {
  const rows = entries.map((e, i) => {
    const n = normaliseEntry(e.type, e.value);
    if (typeof n === 'string') throw new ValidationError([{ field: `entries[${i}].value`, message: n }]);
    if (e.note != null && e.note.length > 1000)
      throw new ValidationError([{ field: `entries[${i}].note`, message: 'must be at most 1000 characters' }]);
    return {
      id: newId('bl'),
      type: n.type,
      value: n.value,
      network: n.type === 'IP' ? n.value : null,
      note: e.note ?? null,
      created_at: w.now,
    };
  });
  return blacklist.insertBlacklistEntries(w.trx, w.shopId, rows);
}

/** What POST /orders knows of its buyer; `ip` and `country` are optional request fields. */
export interface Buyer {
  email: string;
  country?: string | null;
  ip?: string | null;
}

/** The refusal of a buyer the blacklist matches: it says no more than that (not which entry). */
export function buyerBlocked(): ApiError {
  return new ApiError('BUYER_BLOCKED', 'The shop does not accept orders from this buyer.');
}
