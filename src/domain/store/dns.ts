// The DNS look-up of domain verification: the TXT records of one name, through the resolvers DNS_SERVERS names
// (or the system's), bounded by DNS_TIMEOUT_MS. Three answers, and only two of them are about the domain:
//   found       - a TXT record of the name equals the expected value;
//   not_found   - the DNS answered, and the name has no such record (NXDOMAIN, no TXT records, other values);
//   unavailable - the DNS did not answer usefully (timeout, refused, SERVFAIL, unreachable server): says nothing
//                 about the domain, so it is never counted as a failed verification.
import { Resolver } from 'node:dns/promises';

export type TxtLookup = 'found' | 'not_found' | 'unavailable';

export interface DnsOptions {
  /** `ip[:port]` entries; empty: the system's resolvers. */
  servers: readonly string[];
  /** Total time allowed (all tries together). */
  timeoutMs: number;
}

/** node:dns codes that mean "the DNS answered: no such record". */
const definitiveMisses = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA']);

/** Whether `name` has a TXT record whose text (its strings joined, as RFC 7208 reads them) equals `expected`. */
export async function lookUpTxt(name: string, expected: string, options: DnsOptions): Promise<TxtLookup> {
  // Two tries, each with half the budget; the timer below bounds the whole look-up whatever c-ares does.
  const resolver = new Resolver({ timeout: Math.max(50, Math.floor(options.timeoutMs / 2)), tries: 2 });
  if (options.servers.length > 0) resolver.setServers([...options.servers]);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'unavailable'>((resolve) => {
    timer = setTimeout(() => {
      resolver.cancel();
      resolve('unavailable');
    }, options.timeoutMs);
  });
  const lookup = resolver.resolveTxt(name).then(
    (records): TxtLookup => (records.some((chunks) => chunks.join('') === expected) ? 'found' : 'not_found'),
    (err: unknown): TxtLookup =>
      definitiveMisses.has(String((err as { code?: unknown })?.code)) ? 'not_found' : 'unavailable',
  );
  try {
    return await Promise.race([lookup, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
