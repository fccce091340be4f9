import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { classifyError, failureClass, InferenceError, parseRetryAfter, toApplicationFailure } from './errors.js';

const statusError = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  APIError.generate(status, body as object, undefined, new Headers(headers));

const nodeError = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('classifyError', () => {
  it.each([
    [429, 'RateLimited'],
    [408, 'Timeout'],
    [500, 'ServerError'],
    [502, 'ServerError'],
    [503, 'ServerError'],
  ] as const)('HTTP %i is a retryable %s', (status, type) => {
    const err = classifyError(statusError(status, { error: { message: 'busy' } }));
    expect(err).toMatchObject({ kind: 'infrastructure', type, status, message: 'busy' });
  });

  it.each([400, 401, 403, 404, 413, 422])('HTTP %i is a non-retryable request error with the server message', (status) => {
    const err = classifyError(statusError(status, { error: { message: "This model's maximum context length is 4096" } }));
    expect(err).toMatchObject({ kind: 'request', type: 'RequestRejected', status });
    expect(err.message).toBe("This model's maximum context length is 4096");
  });

  it('reads Retry-After on 429 and 503', () => {
    expect(classifyError(statusError(429, {}, { 'retry-after': '7' })).retryAfterMs).toBe(7000);
    expect(classifyError(statusError(503, {}, { 'retry-after': '2' })).retryAfterMs).toBe(2000);
    expect(classifyError(statusError(500, {})).retryAfterMs).toBeUndefined();
  });

  it('recognises connection failures, also wrapped as a cause', () => {
    for (const err of [
      new APIConnectionError({ message: 'Connection error.' }),
      nodeError('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      new TypeError('fetch failed', { cause: nodeError('read ECONNRESET', 'ECONNRESET') }),
      new Error('socket hang up'),
    ]) {
      expect(classifyError(err)).toMatchObject({ kind: 'infrastructure', type: 'ConnectionError' });
    }
  });

  it('recognises timeouts', () => {
    for (const err of [
      new APIConnectionTimeoutError(),
      nodeError('connect ETIMEDOUT', 'ETIMEDOUT'),
      new TypeError('fetch failed', { cause: nodeError('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT') }),
    ]) {
      expect(classifyError(err)).toMatchObject({ kind: 'infrastructure', type: 'Timeout' });
    }
  });

  it('treats unparseable or invalid bodies as malformed responses', () => {
    let syntax: unknown;
    try {
      JSON.parse('{"choices": [');
    } catch (err) {
      syntax = err;
    }
    expect(classifyError(syntax).type).toBe('MalformedResponse');
    expect(classifyError(z.object({ choices: z.array(z.unknown()) }).safeParse({}).error).type).toBe('MalformedResponse');
  });

  it('passes InferenceErrors through and retries anything unrecognised', () => {
    const known = new InferenceError('WrongChoiceCount', 'asked for 4, got 1');
    expect(classifyError(known)).toBe(known);
    expect(classifyError(new Error('surprise'))).toMatchObject({ kind: 'infrastructure', type: 'Unknown' });
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds, HTTP dates and retry-after-ms', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }), now)).toBe(30_000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 00:00:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });
});

describe('toApplicationFailure', () => {
  it('makes request errors non-retryable, with the table type and the server message', () => {
    const failure = toApplicationFailure(statusError(400, { error: { message: 'bad tools' } }));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'RequestRejected', nonRetryable: true, message: 'bad tools' });
    expect((failure as ApplicationFailure).details).toEqual([{ kind: 'request', status: 400 }]);
  });

  it('keeps infrastructure errors retryable and carries Retry-After as the next retry delay', () => {
    const failure = toApplicationFailure(statusError(429, { error: { message: 'slow down' } }, { 'retry-after': '3' }));
    expect(failure).toMatchObject({ type: 'RateLimited', nonRetryable: false, nextRetryDelay: 3000 });
    expect(toApplicationFailure(new Error('socket hang up'))).toMatchObject({ type: 'ConnectionError', nonRetryable: false });
    expect((toApplicationFailure(statusError(500, {})) as ApplicationFailure).nextRetryDelay).toBeUndefined();
  });

  it('returns a cancellation unchanged', () => {
    const cancelled = new CancelledFailure('activity cancelled');
    expect(toApplicationFailure(cancelled)).toBe(cancelled);
  });
});

describe('failureClass', () => {
  it('tells infrastructure from the model and from the environment by the failure type', () => {
    for (const type of [
      'ConnectionError',
      'Timeout',
      'RateLimited',
      'ServerError',
      'MalformedResponse',
      'ToolFailure',
      'TimeoutFailure',
      'VerifiersInfrastructure',
    ]) {
      expect([type, failureClass(type)]).toEqual([type, 'infrastructure']);
    }
    // The server refused the request (a prompt over its context length), or the answer re-tokenized otherwise.
    expect(failureClass('RequestRejected')).toBe('model');
    expect(failureClass('TokenizationDrift')).toBe('model');
    // A raise in the environment's code, or a request it built that fails validation.
    for (const type of ['TypeError', 'Error', 'EnvironmentError', 'ConfigError', 'InvalidRequest']) {
      expect([type, failureClass(type)]).toEqual([type, 'environment']);
    }
  });
});
