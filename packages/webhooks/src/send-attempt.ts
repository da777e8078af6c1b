import type { Clock } from '@svc/protocol';
import type { AttemptOutcome, WebhookEndpointRecord } from '@svc/storage';
import type { SendResult, WebhookSender } from './http-sender';
import { DISABLE_AFTER_FAILING_MS, nextAttemptAt, parseRetryAfter } from './retry-schedule';
import { signatureHeader } from './signature';

export const USER_AGENT = 'Svc-Webhooks/1.0';

export interface AttemptResult {
  /** What to record: `pending` with the next attempt's time, or finished. */
  outcome: AttemptOutcome;
  ok: boolean;
  /** When set, the endpoint is to be disabled for this reason. */
  disableReason: string | undefined;
}

/**
 * One signed attempt of a delivery to its endpoint, and what follows from the answer: the next
 * attempt's time from the retry schedule (a longer `Retry-After` honoured), or none when it
 * succeeded, the schedule is over, or the endpoint is to be disabled (410 Gone, or failing for
 * 5 days). `answered` is called as soon as the receiver has answered (or failed to: null).
 */
export async function sendAttempt(
  sender: WebhookSender,
  endpoint: WebhookEndpointRecord,
  delivery: { eventId: string; payload: string; attempts: number },
  clock: Clock,
  random: () => number,
  answered: (result: SendResult | null) => void = () => {},
): Promise<AttemptResult> {
  const now = clock.now();
  const timestamp = Math.floor(now / 1000);
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && (endpoint.previousSecretExpiresAt ?? 0) > now) secrets.push(endpoint.previousSecret);
  const result = await sender
    .send(
      endpoint.url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, delivery.eventId, timestamp, delivery.payload),
      },
      delivery.payload,
    )
    .then(
      (answer) => {
        answered(answer);
        return answer;
      },
      (error: unknown) => {
        answered(null);
        throw error;
      },
    );
  const attempts = delivery.attempts + 1;
  const after = clock.now();
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  let disableReason: string | undefined;
  if (result.statusCode === 410) disableReason = 'The receiver answered 410 Gone.';
  else if (!ok && endpoint.failingSince !== null && after - endpoint.failingSince >= DISABLE_AFTER_FAILING_MS) {
    disableReason = 'Every delivery failed for 5 days.';
  }
  const next = ok || disableReason ? null : nextAttemptAt(after, attempts, random, parseRetryAfter(result.retryAfter, after));
  const outcome: AttemptOutcome = {
    status: ok ? 'delivered' : next === null ? 'failed' : 'pending',
    attempts,
    nextAttemptAt: next,
    attemptedAt: now,
    statusCode: result.statusCode,
    error: result.error ?? (ok ? null : `HTTP ${result.statusCode}`),
    latencyMs: result.latencyMs,
  };
  return { outcome, ok, disableReason };
}
