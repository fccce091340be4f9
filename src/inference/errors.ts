import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { ZodError } from 'zod';

/** Infrastructure failures are retried; request failures would fail the same way again. */
export type FailureKind = 'infrastructure' | 'request';

/**
 * Every way an inference call fails, and whether retrying can help. These names are the
 * `ApplicationFailure` types that activities throw, so retry policies can refer to them.
 */
export const INFERENCE_FAILURES = {
  /** Refused, reset or dropped connection. */
  ConnectionError: 'infrastructure',
  /** No full answer within the configured timeout, or HTTP 408. */
  Timeout: 'infrastructure',
  /** HTTP 429. */
  RateLimited: 'infrastructure',
  /** HTTP 5xx. */
  ServerError: 'infrastructure',
  /** Unparseable body, or one missing required parts. */
  MalformedResponse: 'infrastructure',
  /** The server returned a different number of choices than `n` (it ignores `n`). */
  WrongChoiceCount: 'infrastructure',
  /** Anything unrecognised: retried, as Temporal retries any error by default. */
  Unknown: 'infrastructure',
  /** HTTP 4xx other than 408 and 429: the server refuses this request. */
  RequestRejected: 'request',
  /** The request failed validation before it was sent. */
  InvalidRequest: 'request',
} as const satisfies Record<string, FailureKind>;

export type InferenceFailureType = keyof typeof INFERENCE_FAILURES;

/**
 * Whose failure it was (issue 40.5): `infrastructure` (a model, tool or sandbox server unreachable or failing, a
 * timeout: retrying helps once it is back), `model` (the model's answer or request does not fit: refused by the
 * server, e.g. over its context length) or `environment` (the environment's code raised, or refused its input).
 */
export type FailureClass = 'infrastructure' | 'model' | 'environment';

/** Failure types (an `ApplicationFailure`'s type, else the error's class name) that are not the environment's. */
const FAILURE_CLASSES: Record<string, FailureClass> = {
  ...Object.fromEntries(
    Object.entries(INFERENCE_FAILURES).map(([type, kind]) => [type, kind === 'infrastructure' ? 'infrastructure' : 'model']),
  ),
  // A request Clotho built and checked before sending is the environment's (its prompt, its sampling).
  InvalidRequest: 'environment',
  // A tool call that failed is retried as a server's failure (an MCP server, a sandbox); a tool's own refusal is its
  // result, not a failure.
  ToolFailure: 'infrastructure',
  // Temporal's own: an attempt that timed out or lost its heartbeat (a worker or server gone).
  TimeoutFailure: 'infrastructure',
  // The store or the JSONL changed under the run.
  SinkCorrupted: 'infrastructure',
  // The verifiers worker's: an episode that failed for its model server or runtime, never a raise of the environment's.
  VerifiersInfrastructure: 'infrastructure',
  TokenizationDrift: 'model',
};

/** The class of a failure type; anything not named (a raise in environment code: TypeError, EnvironmentError) is the environment's. */
export function failureClass(type: string): FailureClass {
  return FAILURE_CLASSES[type] ?? 'environment';
}

/** A classified inference failure. `message` carries the server's own message where it sent one. */
export class InferenceError extends Error {
  override readonly name = 'InferenceError';
  readonly kind: FailureKind;
  readonly status?: number;
  /** How long the server asked us to wait (Retry-After), in milliseconds. */
  readonly retryAfterMs?: number;

  constructor(
    readonly type: InferenceFailureType,
    message: string,
    options: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.kind = INFERENCE_FAILURES[type];
    if (options.status !== undefined) this.status = options.status;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * Reads `retry-after-ms` (OpenAI's) or `Retry-After` (seconds or an HTTP date) as milliseconds.
 * Returns undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The error and its `cause` chain, so a Node error wrapped by fetch or the SDK is still recognised. */
function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err; e !== undefined && e !== null && chain.length < 8; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

function fromStatus(err: APIError): InferenceError {
  const status = err.status as number;
  const body = err.error as { message?: unknown } | undefined;
  const message = typeof body?.message === 'string' ? body.message : err.message;
  const options = { status, retryAfterMs: parseRetryAfter(err.headers), cause: err };
  if (status === 429) return new InferenceError('RateLimited', message, options);
  if (status === 408) return new InferenceError('Timeout', message, options);
  if (status >= 500) return new InferenceError('ServerError', message, options);
  return new InferenceError('RequestRejected', message, options);
}

/** Maps any error from an inference call onto {@link INFERENCE_FAILURES}. */
export function classifyError(err: unknown): InferenceError {
  if (err instanceof InferenceError) return err;
  if (err instanceof APIError && err.status !== undefined) return fromStatus(err);
  if (err instanceof ZodError || err instanceof SyntaxError) {
    return new InferenceError('MalformedResponse', `malformed response: ${err.message}`, { cause: err });
  }
  const chain = causes(err);
  const text = chain.map((e) => `${(e as { name?: unknown }).name} ${(e as { message?: unknown }).message}`).join(' | ');
  const codes = chain.map((e) => (e as { code?: unknown }).code);
  const message = err instanceof Error ? err.message : String(err);
  if (
    err instanceof APIConnectionTimeoutError ||
    codes.some((c) => TIMEOUT_CODES.has(String(c))) ||
    /TimeoutError|timed? ?out/i.test(text)
  ) {
    return new InferenceError('Timeout', message, { cause: err });
  }
  if (
    err instanceof APIConnectionError ||
    codes.some((c) => CONNECTION_CODES.has(String(c))) ||
    /socket hang up|fetch failed|other side closed|terminated/i.test(text)
  ) {
    return new InferenceError('ConnectionError', `${message} (${text})`, { cause: err });
  }
  return new InferenceError('Unknown', message, { cause: err });
}

/**
 * What an activity throws for a failed inference call: the table's type, non-retryable for
 * request errors, and the server's Retry-After as the next retry delay. A cancellation is not a
 * failure: the activity's `CancelledFailure` (the client rejects with the cancellation signal's
 * reason) comes back unchanged, so Temporal records the activity as cancelled.
 */
export function toApplicationFailure(err: unknown): ApplicationFailure | CancelledFailure {
  if (err instanceof CancelledFailure) return err;
  const failure = classifyError(err);
  return ApplicationFailure.create({
    type: failure.type,
    message: failure.message,
    nonRetryable: failure.kind === 'request',
    ...(failure.retryAfterMs !== undefined ? { nextRetryDelay: failure.retryAfterMs } : {}),
    details: [{ kind: failure.kind, status: failure.status ?? null }],
    cause: failure,
  });
}
