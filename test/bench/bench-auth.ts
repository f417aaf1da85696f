// The two auth pieces the bare baseline shares with the real stack, so both hash and parse the same way.
export { hashCredential } from '../../src/auth/credentials';
import { bearerToken } from '../../src/auth/authenticate';

export function bearerTokenOf(header: string | undefined): string {
  return bearerToken(header) ?? '';
}
