import { creditCustomerWallet as credit, debitCustomerWallet as debit } from '../src/domain/customers/wallets';
import type { OperationHandler } from '../src/http/handler';

export const creditCustomerWallet: OperationHandler<'creditCustomerWallet'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await credit(db, auth.shop.id, params.id, body, effects, services.clock),
});

export const debitCustomerWallet: OperationHandler<'debitCustomerWallet'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await debit(db, auth.shop.id, params.id, body, effects, services.clock),
});
