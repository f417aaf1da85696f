import { createPaymentLink as createLink, togglePaymentLink as toggleLink } from '../src/domain/payments/payment-links';
import { createPayment as create, getPayment as read } from '../src/domain/payments/payments';
import type { OperationHandler, Services } from '../src/http/handler';

const deps = (services: Services) => ({
  clock: services.clock,
  checkoutBaseUrl: services.config.checkoutBaseUrl,
  publicUrl: services.config.publicUrl,
  orderTtlMinutes: services.config.orderTtlMinutes,
});

export const createPayment: OperationHandler<'createPayment'> = async ({ db, auth, body, effects, services }) => ({
  status: 201,
  data: await create(db, auth.shop, body, effects, deps(services)),
});

export const getPayment: OperationHandler<'getPayment'> = async ({ db, auth, params, services }) => ({
  data: await read(db, auth.shop.id, params.uniqid, deps(services)),
});

export const createPaymentLink: OperationHandler<'createPaymentLink'> = async ({ db, auth, body, services }) => ({
  status: 201,
  data: await createLink(db, auth.shop, body, deps(services)),
});

export const togglePaymentLink: OperationHandler<'togglePaymentLink'> = async ({ db, auth, params, services }) => ({
  data: await toggleLink(db, auth.shop.id, params.id, deps(services)),
});
