import { createPaymentLink as createLink, togglePaymentLink as toggleLink } from '../src/domain/payments/payment-links';
import {
  createPayment as create,
  getPayment as read,
  preparePayment,
  type PaymentDeps,
} from '../src/domain/payments/payments';
import { preparedWrite, type OperationHandler, type Services } from '../src/http/handler';

const deps = (services: Services): PaymentDeps => ({
  checkoutBaseUrl: services.config.checkoutBaseUrl,
  publicUrl: services.config.publicUrl,
  orderTtlMinutes: services.config.orderTtlMinutes,
  gateways: services.gateways,
});

// A forced provider gateway opens its session before the transaction (preparePayment), never inside it.
export const createPayment = preparedWrite<'createPayment', Awaited<ReturnType<typeof preparePayment>>>(
  ({ db, auth, body, services }) => preparePayment(db, auth.shop, body, deps(services)),
  async ({ write, auth, body, services }, prepared) => ({
    status: 201,
    data: await create(write, auth.shop, body, deps(services), prepared),
  }),
);

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
