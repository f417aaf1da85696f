import type { ReadDb } from '../db/queries/shop-scope';
import {
  createLicense as create,
  deleteLicense as remove,
  getLicense as get,
  licenseCursorList,
  licenseFilters,
  updateLicense as update,
  validateLicense as validate,
  type LicenseDeps,
  type LicenseWriteDeps,
} from '../src/domain/licenses/licenses';
import { singleStatement, type OperationHandler, type Services } from '../src/http/handler';
import { listPage } from '../src/platform/cursor-list';
import { cachedLicenseKeyring } from '../src/platform/license-keys';

const writeDeps = (services: Services, db: ReadDb): LicenseWriteDeps => ({
  keyring: () => cachedLicenseKeyring(services, db),
});

const licenseDeps = (services: Services, db: ReadDb): LicenseDeps => ({
  ...writeDeps(services, db),
  clock: services.clock,
});

export const listLicenses: OperationHandler<'listLicenses'> = async ({ db, auth, query, services }) => ({
  page: await listPage(
    licenseCursorList(licenseDeps(services, db)),
    db,
    services.cursors,
    auth.shop.id,
    { limit: query.limit, cursor: query.cursor, filters: licenseFilters(query) },
    undefined,
  ),
});

export const createLicense: OperationHandler<'createLicense'> = async ({ db, write, body, services }) => ({
  status: 201,
  data: await create(write, body, writeDeps(services, db)),
});

export const getLicense: OperationHandler<'getLicense'> = async ({ db, auth, params, services }) => ({
  data: await get(db, auth.shop.id, params.id, licenseDeps(services, db)),
});

export const updateLicense: OperationHandler<'updateLicense'> = async ({ db, write, params, body, services }) => ({
  data: await update(write, params.id, body, writeDeps(services, db)),
});

export const deleteLicense: OperationHandler<'deleteLicense'> = async ({ write, params }) => {
  await remove(write, params.id);
  return { data: {} };
};

/**
 * The hottest public call of a software seller: one statement, run outside the unit of work when no
 * Idempotency-Key is sent (singleStatement, src/http/handler.ts); then `db` is the pool and the statement writes
 * the request's audit entry itself.
 */
export const validateLicense: OperationHandler<'validateLicense'> = singleStatement<'validateLicense'>(
  async ({ db, auth, body, services, inlineAudit, effects }) => {
    const data = await validate(db, auth.shop.id, body, licenseDeps(services, db), inlineAudit);
    // In the unit of work (an Idempotency-Key was sent) the platform writes the audit entry: name the license in it.
    if (db.isTransaction)
      effects.audit({ action: 'licenses.validate', resourceType: 'license', resourceId: data.license.id });
    return { data };
  },
);
