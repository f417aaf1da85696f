// `NAME=URL,NAME=URL` lists of provider API addresses that stand in for the providers' own (EMAIL_MARKETING_BASE_URLS,
// GATEWAY_BASE_URLS): a local fake, a proxy, a provider's own mock.

/** The names' URLs, trailing slashes removed; throws a message fit for a configuration error. */
export function parseBaseUrls<N extends string>(
  text: string | undefined,
  names: readonly N[],
): Partial<Record<N, string>> {
  const out: Partial<Record<N, string>> = {};
  if (text === undefined || text.trim() === '') return out;
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z_]+)\s*=\s*(\S+)\s*$/.exec(part);
    const name = m?.[1]!.toUpperCase() as N | undefined;
    if (!m || !name || !names.includes(name)) throw new Error(`"${part.trim()}" is not NAME=URL (${names.join(', ')})`);
    let url: URL;
    try {
      url = new URL(m[2]!);
    } catch {
      throw new Error(`${name}: "${m[2]}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`${name}: use an http(s) URL`);
    out[name] = m[2]!.replace(/\/+$/, '');
  }
  return out;
}
