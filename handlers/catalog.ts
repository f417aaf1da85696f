import { duplicateProduct as duplicate, productCursorList } from '../src/domain/catalog/products';
import { claimSerials } from '../src/domain/catalog/serials';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listProducts: OperationHandler<'listProducts'> = listHandler(productCursorList, (query) => ({
  includeVariants: query.include_variants === true,
}));

export const duplicateProduct: OperationHandler<'duplicateProduct'> = async ({ db, auth, params }) => ({
  status: 201,
  data: await duplicate(db, auth.shop.id, params.id),
});

export const claimProductSerials: OperationHandler<'claimProductSerials'> = async ({
  db,
  auth,
  params,
  body,
  effects,
}) => ({
  data: await claimSerials(db, auth.shop.id, params.id, body.amount, effects),
});
