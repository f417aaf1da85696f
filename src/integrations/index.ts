// The payment providers this server speaks to, each behind the one interface (./gateway-provider.ts).
import { btcpayProvider } from './btcpay';
import type { GatewayProvider } from './gateway-provider';
import { paypalProvider } from './paypal';
import { stripeProvider } from './stripe';

export const gatewayProviders: readonly GatewayProvider[] = [stripeProvider, paypalProvider, btcpayProvider];
