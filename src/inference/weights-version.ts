import { InferenceError } from './errors.js';
import type { Completion } from './types.js';

/**
 * The response header by which `clotho inference` tells which version of its weights produced a generation (the
 * version a trainer gave with `POST /v1/weights`): the version the request started on, even when a swap came
 * while it ran.
 */
export const WEIGHTS_VERSION_HEADER = 'x-clotho-weights-version';

/** The weights version a response reports, or undefined when the server reports none (vLLM, OpenAI's API). */
export function weightsVersionOf(headers: Headers): number | undefined {
  const value = headers.get(WEIGHTS_VERSION_HEADER);
  if (value === null) return undefined;
  const version = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(version)) {
    throw new InferenceError('MalformedResponse', `${WEIGHTS_VERSION_HEADER} is not a weights version: ${JSON.stringify(value)}`);
  }
  return version;
}

/** The completions of one response, each stamped with the weights version the response reports, if any. */
export function stampWeightsVersion(completions: Completion[], headers: Headers): Completion[] {
  const weightsVersion = weightsVersionOf(headers);
  return weightsVersion === undefined ? completions : completions.map((c) => ({ ...c, weightsVersion }));
}

/**
 * The oldest of some weights versions, the unknown ones left out (undefined when none is known): the version of a
 * trajectory, or a group, is that of the oldest policy that produced any of its tokens.
 */
export function oldestWeightsVersion(versions: Iterable<number | undefined>): number | undefined {
  let oldest: number | undefined;
  for (const v of versions) if (v !== undefined && (oldest === undefined || v < oldest)) oldest = v;
  return oldest;
}
