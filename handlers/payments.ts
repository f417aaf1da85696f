import { createPaymentLink as createLink, togglePaymentLink as toggleLink } from '../src/domain/payments/payment-links';
import { createPayment as create, getPayment as read } from '../src/domain/payments/payments';
import type { OperationHandler, Services } from '../src/http/handler';

const deps = (services: Services) => ({
  checkoutBaseUrl: services.config.checkoutBaseUrl,
  publicUrl: services.config.publicUrl,
  orderTtlMinutes: services.config.orderTtlMinutes,
});

export const createPayment: OperationHandler<'createPayment'> = async ({ write, auth, body, services }) => ({
  status: 201,
  data: await create(write, auth.shop, body, deps(services)),
});

export const getPayment: OperationHandler<'getPayment'> = async ({ db, auth, params, services }) => ({
  data: await read(db, auth.shop.id, params.uniqid, deps(services)),
});

export const createPaymentLink: OperationHandler<'createPaymentLink'> = async ({ write, auth, body, services }) => ({
  status: 201,
  data: await createLink(write, auth.shop, body, deps(services)),
});

export const togglePaymentLink: OperationHandler<'togglePaymentLink'> = async ({ write, params, services }) => ({
  data: await toggleLink(write, params.id, deps(services)),
});
