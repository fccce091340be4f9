/**
 * BFCL's ground truth written as a model's calls, for tests: this folder's unit tests score it through the
 * environment, and the end-to-end tests' scripted model answers with it. Never used by the environment itself.
 */
import type { BfclFunction, BfclSchema, ExpectedCall, ModelCall } from './checker.js';

// The first acceptable value of a parameter, with dicts (and lists of dicts) of acceptable values made concrete.
function concrete(value: unknown, schema: BfclSchema | undefined): unknown {
  if (schema?.type === 'dict' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const entries = Object.entries(value).map(
      ([key, options]) => [key, (options as unknown[]).find((v) => v !== ''), schema.properties?.[key]] as const,
    );
    return Object.fromEntries(entries.filter(([, v]) => v !== undefined).map(([key, v, sub]) => [key, concrete(v, sub)]));
  }
  if (Array.isArray(value) && schema?.items?.type === 'dict') return value.map((element) => concrete(element, schema.items));
  return value;
}

/** An expected call as a model would write it: the first acceptable value of each parameter. */
export function groundTruthCall(expected: ExpectedCall, functions: readonly BfclFunction[]): ModelCall {
  const properties = functions.find((fn) => fn.name === expected.name)?.parameters.properties ?? {};
  const args: Record<string, unknown> = {};
  for (const [param, acceptable] of Object.entries(expected.arguments)) {
    const value = acceptable.find((v) => v !== '');
    // A few answers list an optional parameter the function does not declare (parallel_multiple_12, _26); BFCL would
    // reject it as unexpected, so the right call leaves it out.
    if (value === undefined || (!Object.hasOwn(properties, param) && acceptable.includes(''))) continue;
    args[param] = concrete(value, properties[param]);
  }
  return { name: expected.name, arguments: args };
}
