// operationId -> handler, for every operation of the contract. Typed as HandlerMap, so an operation added to
// openapi.yaml without an entry here fails to compile. Operations not built yet map to notImplemented (501).
import type { HandlerMap } from '../src/http/handler';
import * as account from './account';
import * as affiliates from './affiliates';
import * as analytics from './analytics';
import * as blacklist from './blacklist';
import * as catalog from './catalog';
import * as catalogExtras from './catalog-extras';
import * as coupons from './coupons';
import * as customers from './customers';
import * as disputes from './disputes';
import * as licenses from './licenses';
import * as marketingBots from './marketing-bots';
import * as oauthConsent from './oauth-consent';
import * as oauth from './oauth';
import * as orderActions from './order-actions';
import * as orderLists from './order-lists';
import * as orders from './orders';
import * as payments from './payments';
import * as resellers from './resellers';
import * as reviewsTickets from './reviews-tickets';
import * as security from './security';
import * as storeSettings from './store-settings';
import * as subscriptions from './subscriptions';
import * as themes from './themes';
import * as wallets from './wallets';
import * as webhooks from './webhooks';

import { notImplemented } from './not-implemented';

export { notImplemented };

export const handlers: HandlerMap = {
  getAccount: account.getAccount,
  getCapabilities: account.getCapabilities,
  listProducts: catalog.listProducts,
  duplicateProduct: catalog.duplicateProduct,
  claimProductSerials: catalog.claimProductSerials,
  listCustomers: customers.listCustomers,
  getCustomer: customers.getCustomer,
  startOAuthAuthorization: oauthConsent.startOAuthAuthorization,
  approveOAuthAuthorization: oauth.approveOAuthAuthorization,
  exchangeOAuthToken: oauth.exchangeOAuthToken,
  revokeOAuthToken: oauth.revokeOAuthToken,
  getOAuthServerMetadata: oauth.getOAuthServerMetadata,
  approveAffiliateApplication: affiliates.approveAffiliateApplication,
  listAffiliateCustomers: affiliates.listAffiliateCustomers,
  getAffiliatePerformance: affiliates.getAffiliatePerformance,
  listAnalyticsReports: analytics.listAnalyticsReports,
  generateAnalyticsReport: analytics.generateAnalyticsReport,
  listCoupons: coupons.listCoupons,
  checkCoupon: coupons.checkCoupon,
  listProductAddons: catalogExtras.listProductAddons,
  updateQuantityDeal: catalogExtras.updateQuantityDeal,
  listProductVariantFields: catalogExtras.listProductVariantFields,
  createProductVariantField: catalogExtras.createProductVariantField,
  createProductVariantFieldOption: catalogExtras.createProductVariantFieldOption,
  listBlacklistEntries: blacklist.listBlacklistEntries,
  convertCustomerAffiliateBalance: affiliates.convertCustomerAffiliateBalance,
  creditCustomerWallet: wallets.creditCustomerWallet,
  debitCustomerWallet: wallets.debitCustomerWallet,
  listLicenses: licenses.listLicenses,
  createLicense: licenses.createLicense,
  validateLicense: licenses.validateLicense,
  deleteLicense: licenses.deleteLicense,
  getLicense: licenses.getLicense,
  updateLicense: licenses.updateLicense,
  listInvoices: orderLists.listInvoices,
  listOrders: orderLists.listOrders,
  createOrder: orders.createOrder,
  completeOrder: orders.completeOrder,
  fulfillOrder: orders.fulfillOrder,
  fulfillOrderItem: orderActions.fulfillOrderItem,
  refundOrder: orderActions.refundOrder,
  createPaymentLink: payments.createPaymentLink,
  togglePaymentLink: payments.togglePaymentLink,
  createPayment: payments.createPayment,
  getPayment: payments.getPayment,
  getResellerProgram: resellers.getResellerProgram,
  updateResellerProgram: resellers.updateResellerProgram,
  listResellerTiers: resellers.listResellerTiers,
  listResellers: resellers.listResellers,
  inviteReseller: resellers.inviteReseller,
  getReseller: resellers.getReseller,
  reinstateReseller: resellers.reinstateReseller,
  suspendReseller: resellers.suspendReseller,
  listAuditTrail: security.listAuditTrail,
  getSessionTrail: security.getSessionTrail,
  revokeOwnerSession: security.revokeOwnerSession,
  listEmailMarketingSettings: marketingBots.listEmailMarketingSettings,
  getStoreBranding: storeSettings.getStoreBranding,
  updateStoreBranding: storeSettings.updateStoreBranding,
  listStoreDomains: storeSettings.listStoreDomains,
  addStoreDomain: storeSettings.addStoreDomain,
  verifyStoreDomain: storeSettings.verifyStoreDomain,
  getStoreLayout: storeSettings.getStoreLayout,
  updateStoreLayout: storeSettings.updateStoreLayout,
  updateMessagingBotNotifications: marketingBots.updateMessagingBotNotifications,
  listSubscriptions: subscriptions.listSubscriptions,
  updateSubscriptionCustomFields: subscriptions.updateSubscriptionCustomFields,
  pauseSubscription: subscriptions.pauseSubscription,
  getSubscriptionPlanOptions: subscriptions.getSubscriptionPlanOptions,
  listDisputes: disputes.listDisputes,
  listReviews: reviewsTickets.listReviews,
  listTickets: reviewsTickets.listTickets,
  listThemes: themes.listThemes,
  createTheme: themes.createTheme,
  getThemeDocument: themes.getThemeDocument,
  saveThemeDocument: themes.saveThemeDocument,
  getThemeDraft: themes.getThemeDraft,
  getThemeDocumentSchema: themes.getThemeDocumentSchema,
  createThemePreview: themes.createThemePreview,
  deleteThemePreview: themes.deleteThemePreview,
  publishTheme: themes.publishTheme,
  getThemeSettings: themes.getThemeSettings,
  updateThemeSettings: themes.updateThemeSettings,
  listWebhooks: webhooks.listWebhooks,
  createWebhook: webhooks.createWebhook,
  updateWebhook: webhooks.updateWebhook,
  listWebhookLogs: webhooks.listWebhookLogs,
  retryWebhookDelivery: webhooks.retryWebhookDelivery,
  deleteWebhook: webhooks.deleteWebhook,
  rotateWebhookSecret: webhooks.rotateWebhookSecret,
  testWebhook: webhooks.testWebhook,
  listEvents: webhooks.listEvents,
  getEvent: webhooks.getEvent,
};
