import { z } from 'zod';

/**
 * A language boundary described once: the zod schemas of the activities a Python worker serves (each one's input and
 * answer) and of the other messages it sends (its ready line, its heartbeats). TypeScript derives its types from them;
 * `npm run boundary-schemas` (scripts/boundary-schemas.mjs) writes them as JSON Schema into the Python package, whose
 * worker validates every input, answer and message against it (`boundary.py`), and a test fails when that file is
 * stale. A field renamed on one side then fails a test, not a run.
 */
export interface BoundaryContract {
  /** The module that holds the schemas, named in the generated file. */
  source: string;
  activities: Record<string, { input: z.ZodType; answer: z.ZodType }>;
  messages: Record<string, z.ZodType>;
}

/** The activities of a contract as `proxyActivities` calls them: each takes its input and resolves to its answer. */
export type ActivitiesOf<A extends BoundaryContract['activities']> = {
  [K in keyof A]: (input: z.input<A[K]['input']>) => Promise<z.output<A[K]['answer']>>;
};

/**
 * The contract as JSON Schema (draft-07, which Python's fastjsonschema takes), one self-contained schema per input,
 * answer and message. Each describes what its zod schema accepts (`io: 'input'`), so what Python holds a value to is
 * what TypeScript's parse would take.
 */
export function boundaryJsonSchema(contract: BoundaryContract): Record<string, unknown> {
  const json = (schema: z.ZodType) => z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'throw' });
  const activities = Object.fromEntries(
    Object.entries(contract.activities).map(([name, { input, answer }]) => [name, { input: json(input), answer: json(answer) }]),
  );
  const messages = Object.fromEntries(Object.entries(contract.messages).map(([name, schema]) => [name, json(schema)]));
  return {
    $comment: `Generated from ${contract.source} by \`npm run boundary-schemas\`: change the zod schemas there, never this file.`,
    source: contract.source,
    activities,
    messages,
  };
}

/** The file {@link boundaryJsonSchema} is written as: two-space JSON, one newline at the end. */
export function boundaryJsonText(contract: BoundaryContract): string {
  return `${JSON.stringify(boundaryJsonSchema(contract), null, 2)}\n`;
}
