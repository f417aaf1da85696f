// Variant fields and options, quantity deals and add-ons (src/domain/catalog/catalog-extras.ts); their effect on orders is
// in src/domain/orders/line-extras.ts.
import {
  addonCursorList,
  createVariantField,
  createVariantFieldOption,
  listVariantFields,
  updateQuantityDeal as update,
} from '../src/domain/catalog/catalog-extras';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listProductVariantFields: OperationHandler<'listProductVariantFields'> = async ({ db, auth, params }) => ({
  data: await listVariantFields(db, auth.shop.id, params.id),
});

export const createProductVariantField: OperationHandler<'createProductVariantField'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  status: 201,
  data: await createVariantField(db, auth.shop.id, params.id, body, effects, services.clock),
});

export const createProductVariantFieldOption: OperationHandler<'createProductVariantFieldOption'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  status: 201,
  data: await createVariantFieldOption(db, auth.shop.id, params.id, params.fieldId, body, effects, services.clock),
});

export const updateQuantityDeal: OperationHandler<'updateQuantityDeal'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await update(db, auth.shop.id, params.uniqid, body, effects, services.clock),
});

export const listProductAddons: OperationHandler<'listProductAddons'> = listHandler(addonCursorList, () => undefined);
