import { duplicateProduct as duplicate, listProducts as list } from '../src/domain/products';
import type { OperationHandler } from '../src/http/handler';

export const listProducts: OperationHandler<'listProducts'> = async ({ db, auth, query, services }) => ({
  page: await list(db, services.cursors, auth.shop.id, {
    limit: query.limit ?? 50,
    cursor: query.cursor,
    includeVariants: query.include_variants === true,
  }),
});

export const duplicateProduct: OperationHandler<'duplicateProduct'> = async ({ db, auth, params }) => ({
  status: 201,
  data: await duplicate(db, auth.shop.id, params.id),
});
