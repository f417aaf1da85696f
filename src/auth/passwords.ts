// Shop owners' passwords: argon2id (the `argon2` package, its prebuilt binding), with OWASP's minimum parameters
// (19 MiB of memory, 2 passes, 1 lane: memory-hard, so a stolen hash is costly to guess at on GPUs). The encoded hash
// carries its own parameters, so raising them later keeps old hashes verifiable.
import type Argon2 from 'argon2';

// Loaded on first use: a native module found and opened at every start (~4 ms) that most processes never call.
let argon2: typeof Argon2 | undefined;
const load = () => (argon2 ??= require('argon2') as typeof Argon2);

/** Passwords are 12 to 256 characters (NIST SP 800-63B: length over composition rules). */
export const passwordMinLength = 12;
export const passwordMaxLength = 256;

export function hashPassword(password: string): Promise<string> {
  const lib = load();
  return lib.hash(password, { type: lib.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
}

/** Whether the password matches the encoded hash; a malformed hash is a mismatch, never an exception. */
export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await load().verify(hash, password);
  } catch {
    return false;
  }
}

let decoy: Promise<string> | undefined;

/**
 * Verifies against a hash of nothing anyone knows: the answer for an unknown email then takes as long as a wrong
 * password, so the timing does not tell which emails have accounts.
 */
export async function verifyDecoy(password: string): Promise<false> {
  decoy ??= hashPassword(`decoy ${Math.random()}`);
  await verifyPassword(await decoy, password);
  return false;
}
