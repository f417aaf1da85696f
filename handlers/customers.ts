import { convertAffiliateBalance as convert } from '../src/domain/affiliates/affiliates';
import { blacklistCursorList } from '../src/domain/customers/blacklist';
import { affiliateFiguresOfCustomer } from '../src/domain/affiliates/affiliates';
import { customerCursorList, getCustomer as get } from '../src/domain/customers/customers';
import { creditCustomerWallet as credit, debitCustomerWallet as debit } from '../src/domain/customers/wallets';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listCustomers: OperationHandler<'listCustomers'> = listHandler(customerCursorList, () => undefined);

export const getCustomer: OperationHandler<'getCustomer'> = async ({ db, auth, params, query }) => ({
  data: await get(db, auth.shop.id, params.id, {
    affiliateFigures: query.include_affiliate === true ? affiliateFiguresOfCustomer : undefined,
  }),
});

export const creditCustomerWallet: OperationHandler<'creditCustomerWallet'> = async ({ write, params, body }) => ({
  data: await credit(write, params.id, body),
});

export const debitCustomerWallet: OperationHandler<'debitCustomerWallet'> = async ({ write, params, body }) => ({
  data: await debit(write, params.id, body),
});

export const convertCustomerAffiliateBalance: OperationHandler<'convertCustomerAffiliateBalance'> = async ({
  write,
  params,
  body,
}) => ({
  data: await convert(write, params.id, body),
});

export const listBlacklistEntries: OperationHandler<'listBlacklistEntries'> = listHandler(
  blacklistCursorList,
  () => undefined,
);
