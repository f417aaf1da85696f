import { duplicateProduct as duplicate, listProducts as list } from '../src/domain/products';
import { claimSerials } from '../src/domain/serials';
import type { OperationHandler } from '../src/http/handler';

export const listProducts: OperationHandler<'listProducts'> = async ({ db, auth, query, services }) => ({
  page: await list(db, services.cursors, auth.shop.id, {
    limit: query.limit,
    cursor: query.cursor,
    includeVariants: query.include_variants === true,
  }),
});

export const duplicateProduct: OperationHandler<'duplicateProduct'> = async ({ db, auth, params }) => ({
  status: 201,
  data: await duplicate(db, auth.shop.id, params.id),
});

export const claimProductSerials: OperationHandler<'claimProductSerials'> = async ({ db, auth, params, body }) => ({
  data: await claimSerials(db, auth.shop.id, params.id, body.amount),
});
