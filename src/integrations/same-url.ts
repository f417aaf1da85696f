// Whether a provider's webhook posts to this shop's route: the two addresses as a URL parser sees them (scheme and
// host case, default ports), so `HTTPS://Api.Example.com:443/x` is `https://api.example.com/x`.
export function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}
