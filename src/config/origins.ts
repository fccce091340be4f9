import type { z } from 'zod';
import { expectation } from './fields.js';
import { isObject } from './merge.js';
import { didYouMean } from './suggest.js';

/** Where a value came from (a flag, a YAML path, the environment's defaults) and its raw form, by dotted path. */
export type Origins = Map<string, { label: string; raw: unknown; cli: boolean }>;

/** Records where `value` and everything inside it came from, labelled by `label` with its shown path. */
export function record(origins: Origins, value: unknown, path: (string | number)[], label: (shown: string) => string): void {
  const shown = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
  origins.set(path.join('.'), { label: label(shown), raw: value, cli: false });
  if (Array.isArray(value)) value.forEach((v, i) => record(origins, v, [...path, i], label));
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) record(origins, v, [...path, k], label);
}

const got = (raw: unknown, cli: boolean): string =>
  raw === null ? 'None' : raw === true && cli ? 'no value' : (JSON.stringify(raw) ?? String(raw));

/** Validates one section and turns zod's issues into problems that name the flag or YAML path. */
export function check<S extends z.ZodType>(
  schema: S,
  value: unknown,
  path: string,
  shape: z.ZodRawShape,
  origins: Origins,
  problems: string[],
): z.infer<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const at = [path, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const label = origins.get(`${at}.${key}`)?.label ?? `${at}.${key}`;
        problems.push(`${label}: unknown key${didYouMean(key, Object.keys(shape))}`);
      }
      continue;
    }
    const origin = origins.get(at);
    const field = issue.path.length === 1 ? shape[String(issue.path[0])] : undefined;
    const wanted = field ? `expected ${expectation(field as z.ZodType)}` : issue.message;
    problems.push(origin ? `${origin.label}: ${wanted}, got ${got(origin.raw, origin.cli)}` : `${at}: ${wanted}`);
  }
  return undefined;
}
