/**
 * A message that can never be processed, however often it is retried: unreadable on the wire, or
 * declared so by a handler. The consumer runner sends it to `<topic>.dlq` and moves on. `code` is
 * stable (it lands in the `dlq-code` header and the `consumer_dlq_total` label); `message` must
 * carry no personal data, because it is copied into the `dlq-reason` header.
 */
export class PoisonMessageError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PoisonMessageError';
    this.code = code;
  }
}

/** What may be logged of an error: handler errors can carry row values in driver fields. */
export const errorSummary = (err: unknown) =>
  err instanceof Error
    ? { name: err.name, message: err.message.slice(0, 300), code: (err as { code?: unknown }).code }
    : { message: String(err).slice(0, 300) };

export const isPoisonMessageError = (err: unknown): err is PoisonMessageError => err instanceof PoisonMessageError;

/**
 * The bus cannot be reached at all (broker down, connection refused, timeouts). Sending the same
 * messages one by one would fail the same way, so the outbox publisher ends its run instead.
 * Any other publish error is about the messages themselves and is retried row by row.
 */
export class EventBusUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EventBusUnavailableError';
  }
}

/**
 * Kafka refused a fenced publisher's send or commit: another replica initialised the same
 * transactional.id since (it took the publisher's lock over), so this producer's epoch is fenced and
 * what it had sent in its open transaction is aborted. The publisher stops its run; it must not send again.
 */
export class EventBusFencedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EventBusFencedError';
  }
}
