// A refund is PayPal's refund of the session's capture (SessionState.paymentRef is the capture id), keyed by our
// refund id so a retried refund is never a second refund.
import { decimalString } from '../../platform/money';
import { ProviderError, type ProviderAccount, type ProviderRefund, type RefundRequest } from '../gateway-provider';
import { describeError, type PayPalClientOptions, PayPalClient } from './client';
import { requestIdFor } from './request-ids';
import { asRefund } from './wire';

/** PayPal's limit on note_to_payer. */
const maxNote = 255;

export async function refund(
  account: ProviderAccount,
  request: RefundRequest,
  options: PayPalClientOptions,
): Promise<ProviderRefund> {
  const body = {
    amount: { currency_code: request.currency, value: decimalString(request.amount, request.currency) },
    ...(request.reason ? { note_to_payer: request.reason.slice(0, maxNote) } : {}),
  };
  const answer = await new PayPalClient(account, options).call({
    method: 'POST',
    path: `/v2/payments/captures/${encodeURIComponent(request.paymentRef)}/refund`,
    body,
    requestId: requestIdFor('refund', request.refundId),
  });
  if (answer.status !== 200 && answer.status !== 201) {
    // REFUND_AMOUNT_EXCEEDED, CAPTURE_FULLY_REFUNDED, TRANSACTION_DISPUTED...: PayPal's "no", named.
    throw new ProviderError('refused', `PayPal refused the refund (${describeError(answer.body)})`);
  }
  const made = asRefund(answer.body);
  if (made.status === 'COMPLETED') return { providerRefundId: made.id, status: 'SUCCEEDED' };
  if (made.status === 'PENDING') return { providerRefundId: made.id, status: 'PENDING' };
  throw new ProviderError('refused', `PayPal's refund ${made.id} is ${made.status ?? 'without a status'}`);
}
