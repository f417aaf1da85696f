// `owner create`: a shop owner account, who signs in on the hosted OAuth consent page to approve apps for the shop.
// The password is hashed (argon2id, src/auth/passwords.ts) before anything is written; it is never printed or logged.
import type { Operator } from './operator';
import { insertOwnerAccount, ownerAccountByEmail } from '../../db/queries/owner-sessions';
import { shopById } from '../../db/queries/shops';
import { hashPassword, passwordMaxLength, passwordMinLength } from '../auth/passwords';
import { newId } from '../ids';
import { AdminError, operatorWrite } from './admin';

// What the contract accepts as an email elsewhere: one @, no spaces, at most 254 characters.
const emailShape = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export async function createOwner(
  op: Operator,
  input: { shopId: string; email: string; password: string },
): Promise<{ id: string; shop_id: string; email: string }> {
  const { db } = op;
  const email = input.email.trim().toLowerCase();
  if (email.length > 254 || !emailShape.test(email)) throw new AdminError('--email must be an email address');
  if (input.password.length < passwordMinLength || input.password.length > passwordMaxLength) {
    throw new AdminError(`The password must be ${passwordMinLength} to ${passwordMaxLength} characters long`);
  }
  if (!(await shopById(db, input.shopId))) throw new AdminError(`No shop with id ${input.shopId}`);
  if (await ownerAccountByEmail(db, email)) throw new AdminError(`An owner account with email ${email} exists already`);
  const passwordHash = await hashPassword(input.password);
  const id = newId('own');
  try {
    await operatorWrite(op, input.shopId, 'cli:owner create', ({ trx }) =>
      insertOwnerAccount(trx, input.shopId, { id, email, password_hash: passwordHash }),
    );
  } catch (err) {
    // Two creations of one email at once: the unique index decides.
    if ((err as { code?: string }).code === '23505')
      throw new AdminError(`An owner account with email ${email} exists already`);
    throw err;
  }
  return { id, shop_id: input.shopId, email };
}
