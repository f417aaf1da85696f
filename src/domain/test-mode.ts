// Test mode (issue 26): each live shop has a test twin, a shop of its own (`livemode = false`) linked to it, made
// the first time a test credential or test data is asked for. Test credentials belong to the twin, so everything
// they create lives in the twin and the composite (shop_id, id) keys keep the two modes apart exactly as they keep
// two shops apart: a test id asked with a live key is not found. The twin is where the SANDBOX gateway lives, and
// its clock can be advanced (a test clock); a live shop always runs on real time.
import type { Kysely, Transaction } from 'kysely';
import { advanceShopClock, existingTestTwinOf, shopById, testTwinOf } from '../../db/queries/shops';
import type { Database, Shop } from '../../db/tables';
import type { AuthContext } from '../auth/authenticate';
import type { CredentialMode } from '../auth/credentials';
import { ApiError } from '../errors';
import { newId } from '../ids';
import { addSandboxGateway } from './payments/gateways';

export const credentialModes: readonly CredentialMode[] = ['live', 'test'];

/** The live shop's test twin, made (with its SANDBOX gateway) on first use; racing callers get the same twin. */
export async function testShopOf(trx: Transaction<Database>, liveShopId: string): Promise<Shop> {
  const id = newId('shop');
  const twin = await testTwinOf(trx, liveShopId, id);
  if (twin.id === id) await addSandboxGateway(trx, twin.id);
  return twin;
}

/**
 * The shop a credential or an operator command of this mode acts in: the live shop itself, or its test twin. A
 * shop id that already names a test twin is taken as it is in test mode (and refused in live mode): an operator may
 * name either id.
 */
export async function shopInMode(
  db: Kysely<Database>,
  shopId: string,
  mode: CredentialMode,
): Promise<Shop | undefined> {
  const shop = await shopById(db, shopId);
  if (!shop) return undefined;
  if (mode === 'live') return shop.livemode ? shop : undefined;
  if (!shop.livemode) return shop;
  if (db.isTransaction) return testShopOf(db as Transaction<Database>, shop.id);
  return (await existingTestTwinOf(db, shop.id)) ?? db.transaction().execute((trx) => testShopOf(trx, shop.id));
}

/** The test clock as the API shows it. */
export function testClockView(realNow: Date, offsetMs: number) {
  return {
    livemode: false as const,
    now: new Date(realNow.getTime() + offsetMs).toISOString(),
    advanced_seconds: Math.floor(offsetMs / 1000),
  };
}

function noClockInLiveMode(): ApiError {
  return new ApiError(
    'TEST_CLOCK_NOT_FOUND',
    'Live mode has no test clock: a live shop always runs on real time. Use a test key (mdk_test_...).',
  );
}

/** `GET /me/test-clock`: the test shop's clock; live mode has none (not found). */
export function testClockOf(auth: AuthContext, realNow: Date) {
  if (auth.shop.livemode) throw noClockInLiveMode();
  return testClockView(realNow, auth.shop.clockOffsetMs);
}

/**
 * How far a test clock may run ahead of real time in all: ten years (with their leap days). So every time a test shop
 * writes (its events, due dates, retries, a renewal years ahead) stays far inside the range of a PostgreSQL
 * timestamp, and one advance may take the whole of it.
 */
export const maxClockOffsetSeconds = 10 * 366 * 24 * 3600;
export const maxAdvanceSeconds = maxClockOffsetSeconds;

/**
 * Moves a test shop's clock forward by `seconds`, within the bound (maxClockOffsetSeconds in all): the one place the
 * bound is enforced, for the API and the CLI. The check and the move are one statement, so two advances racing
 * cannot take the clock past it together. Beyond it: 400 `TEST_CLOCK_LIMIT`, nothing moved. Undefined when the shop
 * is not a test shop.
 */
export async function moveTestClock(db: Kysely<Database>, shopId: string, seconds: number): Promise<Shop | undefined> {
  const moved = await advanceShopClock(db, shopId, seconds * 1000, maxClockOffsetSeconds * 1000);
  if (moved) return moved;
  const shop = await shopById(db, shopId);
  if (!shop || shop.livemode) return undefined;
  const left = maxClockOffsetSeconds - Math.floor(Number(shop.clock_offset_ms) / 1000);
  throw new ApiError(
    'TEST_CLOCK_LIMIT',
    `A test clock runs at most ${maxClockOffsetSeconds} seconds (ten years) ahead of real time: this one may move ${Math.max(0, left)} more seconds.`,
  );
}

/**
 * `POST /me/test-clock/advance`: moves the test shop's clock forward by `seconds` (moveTestClock: at most ten years
 * ahead of real time in all). What falls due in that time (renewals, expiries, retries) is run by the worker on the
 * shop's new time, each once. Advancing by 0 changes nothing. The update adds to the stored offset, so two advances
 * racing both count, in either order.
 */
export async function advanceTestClock(trx: Transaction<Database>, auth: AuthContext, seconds: number, realNow: Date) {
  if (auth.shop.livemode) throw noClockInLiveMode();
  const shop = await moveTestClock(trx, auth.shop.id, seconds);
  if (!shop) throw noClockInLiveMode();
  return testClockView(realNow, Number(shop.clock_offset_ms));
}
