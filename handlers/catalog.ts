import type { ReadDb } from '../db/queries/shop-scope';
import {
  addonCursorList,
  createVariantField,
  createVariantFieldOption,
  listVariantFields,
  updateQuantityDeal as update,
} from '../src/domain/catalog/catalog-extras';
import { checkCoupon as check, couponCursorList } from '../src/domain/catalog/coupons';
import { duplicateProduct as duplicate, productCursorList } from '../src/domain/catalog/products';
import { claimSerials } from '../src/domain/catalog/serials';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listProducts: OperationHandler<'listProducts'> = listHandler(productCursorList, (query) => ({
  includeVariants: query.include_variants === true,
}));

export const duplicateProduct: OperationHandler<'duplicateProduct'> = async ({ write, params }) => ({
  status: 201,
  data: await duplicate(write, params.id),
});

export const claimProductSerials: OperationHandler<'claimProductSerials'> = async ({ write, params, body }) => ({
  data: await claimSerials(write, params.id, body.amount),
});

// Variant fields and options, quantity deals and add-ons (src/domain/catalog/catalog-extras.ts); their effect on orders is
// in src/domain/catalog/line-extras.ts.

export const listProductVariantFields: OperationHandler<'listProductVariantFields'> = async ({ db, auth, params }) => ({
  data: await listVariantFields(db, auth.shop.id, params.id),
});

export const createProductVariantField: OperationHandler<'createProductVariantField'> = async ({
  write,
  params,
  body,
}) => ({
  status: 201,
  data: await createVariantField(write, params.id, body),
});

export const createProductVariantFieldOption: OperationHandler<'createProductVariantFieldOption'> = async ({
  write,
  params,
  body,
}) => ({
  status: 201,
  data: await createVariantFieldOption(write, params.id, params.fieldId, body),
});

export const updateQuantityDeal: OperationHandler<'updateQuantityDeal'> = async ({ write, params, body }) => ({
  data: await update(write, params.uniqid, body),
});

export const listProductAddons: OperationHandler<'listProductAddons'> = listHandler(addonCursorList, () => undefined);

export const listCoupons: OperationHandler<'listCoupons'> = listHandler(couponCursorList, () => undefined);

export const checkCoupon: OperationHandler<'checkCoupon'> = async ({ db, auth, params, query, services }) => ({
  data: await check(db as ReadDb, auth.shop.id, params.code, query, services.clock),
});
