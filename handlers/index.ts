// operationId -> handler, for every operation of the contract. Typed as HandlerMap, so an operation added to
// openapi.yaml without an entry here fails to compile. Operations not built yet map to notImplemented (501).
import type { HandlerMap } from '../src/http/handler';
import * as account from './account';
import * as affiliates from './affiliates';
import * as analytics from './analytics';
import * as catalog from './catalog';
import * as customers from './customers';
import * as licenses from './licenses';
import * as orders from './orders';
import * as payments from './payments';
import * as resellers from './resellers';
import * as security from './security';
import * as store from './store';
import * as subscriptions from './subscriptions';
import * as support from './support';
import * as themes from './themes';
import * as webhooks from './webhooks';

import { notImplemented } from './not-implemented';

export { notImplemented };

export const handlers: HandlerMap = {
  getAccount: account.getAccount,
  getCapabilities: account.getCapabilities,
  getTestClock: account.getTestClock,
  advanceTestClock: account.advanceTestClock,
  startOAuthAuthorization: account.startOAuthAuthorization,
  approveOAuthAuthorization: account.approveOAuthAuthorization,
  exchangeOAuthToken: account.exchangeOAuthToken,
  revokeOAuthToken: account.revokeOAuthToken,
  getOAuthServerMetadata: account.getOAuthServerMetadata,
  createOrder: orders.createOrder,
  listOrders: orders.listOrders,
  getOrder: orders.getOrder,
  completeOrder: orders.completeOrder,
  refundOrder: orders.refundOrder,
  fulfillOrder: orders.fulfillOrder,
  fulfillOrderItem: orders.fulfillOrderItem,
  listInvoices: orders.listInvoices,
  getInvoice: orders.getInvoice,
  createPayment: payments.createPayment,
  getPayment: payments.getPayment,
  createPaymentLink: payments.createPaymentLink,
  togglePaymentLink: payments.togglePaymentLink,
  listProducts: catalog.listProducts,
  duplicateProduct: catalog.duplicateProduct,
  claimProductSerials: catalog.claimProductSerials,
  listProductVariantFields: catalog.listProductVariantFields,
  createProductVariantField: catalog.createProductVariantField,
  createProductVariantFieldOption: catalog.createProductVariantFieldOption,
  updateQuantityDeal: catalog.updateQuantityDeal,
  listProductAddons: catalog.listProductAddons,
  listCoupons: catalog.listCoupons,
  checkCoupon: catalog.checkCoupon,
  listCustomers: customers.listCustomers,
  getCustomer: customers.getCustomer,
  creditCustomerWallet: customers.creditCustomerWallet,
  debitCustomerWallet: customers.debitCustomerWallet,
  convertCustomerAffiliateBalance: customers.convertCustomerAffiliateBalance,
  listBlacklistEntries: customers.listBlacklistEntries,
  listAffiliateCustomers: affiliates.listAffiliateCustomers,
  getAffiliatePerformance: affiliates.getAffiliatePerformance,
  approveAffiliateApplication: affiliates.approveAffiliateApplication,
  listSubscriptions: subscriptions.listSubscriptions,
  getSubscriptionPlanOptions: subscriptions.getSubscriptionPlanOptions,
  pauseSubscription: subscriptions.pauseSubscription,
  updateSubscriptionCustomFields: subscriptions.updateSubscriptionCustomFields,
  listDisputes: support.listDisputes,
  listReviews: support.listReviews,
  listTickets: support.listTickets,
  listLicenses: licenses.listLicenses,
  createLicense: licenses.createLicense,
  getLicense: licenses.getLicense,
  updateLicense: licenses.updateLicense,
  deleteLicense: licenses.deleteLicense,
  validateLicense: licenses.validateLicense,
  listWebhooks: webhooks.listWebhooks,
  createWebhook: webhooks.createWebhook,
  deleteWebhook: webhooks.deleteWebhook,
  updateWebhook: webhooks.updateWebhook,
  rotateWebhookSecret: webhooks.rotateWebhookSecret,
  testWebhook: webhooks.testWebhook,
  listWebhookLogs: webhooks.listWebhookLogs,
  retryWebhookDelivery: webhooks.retryWebhookDelivery,
  listEvents: webhooks.listEvents,
  getEvent: webhooks.getEvent,
  listThemes: themes.listThemes,
  createTheme: themes.createTheme,
  getThemeSettings: themes.getThemeSettings,
  updateThemeSettings: themes.updateThemeSettings,
  getThemeDocument: themes.getThemeDocument,
  saveThemeDocument: themes.saveThemeDocument,
  getThemeDraft: themes.getThemeDraft,
  getThemeDocumentSchema: themes.getThemeDocumentSchema,
  createThemePreview: themes.createThemePreview,
  deleteThemePreview: themes.deleteThemePreview,
  publishTheme: themes.publishTheme,
  getStoreBranding: store.getStoreBranding,
  updateStoreBranding: store.updateStoreBranding,
  getStoreLayout: store.getStoreLayout,
  updateStoreLayout: store.updateStoreLayout,
  listStoreDomains: store.listStoreDomains,
  addStoreDomain: store.addStoreDomain,
  verifyStoreDomain: store.verifyStoreDomain,
  listEmailMarketingSettings: store.listEmailMarketingSettings,
  updateMessagingBotNotifications: store.updateMessagingBotNotifications,
  listAnalyticsReports: analytics.listAnalyticsReports,
  generateAnalyticsReport: analytics.generateAnalyticsReport,
  listAuditTrail: security.listAuditTrail,
  getSessionTrail: security.getSessionTrail,
  revokeOwnerSession: security.revokeOwnerSession,
  listResellers: resellers.listResellers,
  getReseller: resellers.getReseller,
  inviteReseller: resellers.inviteReseller,
  suspendReseller: resellers.suspendReseller,
  reinstateReseller: resellers.reinstateReseller,
  getResellerProgram: resellers.getResellerProgram,
  updateResellerProgram: resellers.updateResellerProgram,
  listResellerTiers: resellers.listResellerTiers,
};
