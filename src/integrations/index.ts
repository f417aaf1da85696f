// The payment providers this server speaks to, each behind the one interface (./gateway-provider.ts).
import type { GatewayProvider } from './gateway-provider';

export const gatewayProviders: readonly GatewayProvider[] = [];
