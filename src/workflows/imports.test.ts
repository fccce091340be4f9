import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

/**
 * Workflow code runs in Temporal's sandbox: an import of a Node built-in or of activity code by value passes
 * the compiler and then crash-loops the worker. Workflow files may import @temporalio/workflow and
 * @temporalio/common, other workflow files, schema modules that import nothing by value themselves (pure helpers
 * shared with activities, such as `schema/text.ts`), and anything else only as types.
 */
const folder = new URL('./', import.meta.url);
const schemaFolder = new URL('../schema/', import.meta.url);

function valueImports(source: string): string[] {
  const imports = [...source.matchAll(/^import\s+(type\s+)?[^'"]*?from\s+'([^']+)';/gms)];
  return imports
    .filter(([statement, typeOnly]) => !typeOnly && !/^import\s+\{\s*(type\s+\w+\s*,?\s*)+\}/.test(statement!))
    .map(([, , specifier]) => specifier!);
}

/** Whether the schema module (`text.js`) imports nothing by value: only such a one is safe in the sandbox. */
async function importsNothing(module: string): Promise<boolean> {
  return valueImports(await readFile(new URL(module.replace(/\.js$/, '.ts'), schemaFolder), 'utf8')).length === 0;
}

describe('workflow files', () => {
  it('import only the workflow API, Temporal common types, and other workflow files by value', async () => {
    const files = (await readdir(folder)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files).toContain('rollout-group.ts');
    const offences: string[] = [];
    for (const file of files) {
      for (const specifier of valueImports(await readFile(new URL(file, folder), 'utf8'))) {
        const allowed = specifier === '@temporalio/workflow' || specifier === '@temporalio/common' || /^\.\/[\w-]+\.js$/.test(specifier)
          || (/^\.\.\/schema\/[\w-]+\.js$/.test(specifier) && await importsNothing(specifier.slice('../schema/'.length)));
        if (!allowed) offences.push(`${file}: ${specifier}`);
      }
    }
    expect(offences).toEqual([]);
  });

  // index.ts states the rule: a local activity's result can arrive at another point on replay than when it
  // first ran, so only workflows that never have two branches issuing commands may use one.
  it('use local activities only in straight-line workflows (rollout-group), never beside other branches', async () => {
    const files = (await readdir(folder)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const users: string[] = [];
    for (const file of files) {
      if (/\b(stepActivities|proxyLocalActivities)\s*[<(]/.test(await readFile(new URL(file, folder), 'utf8'))) users.push(file);
    }
    // activity-options defines the helper.
    expect(users.sort()).toEqual(['activity-options.ts', 'rollout-group.ts']);
  });

  it('allow a schema module only when it imports nothing by value', async () => {
    expect(await importsNothing('text.js')).toBe(true);
    expect(await importsNothing('rollout.js')).toBe(false);
  });

  it('the check sees value imports for what they are', () => {
    expect(valueImports("import { readFile } from 'node:fs';\nimport type { X } from '../activities/a.js';")).toEqual(['node:fs']);
  });
});

/** `src/` cruised by dependency-cruiser with `.dependency-cruiser.cjs` (value imports only: type-only ones are erased). */
async function cruiseSrc(): Promise<ICruiseResult> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
  const tsConfig = extractTSConfig(join(root, 'tsconfig.json'));
  const result = await cruise(['src'], { ...options, baseDir: root, outputType: 'json' }, undefined, { tsConfig });
  return JSON.parse(result.output as string) as ICruiseResult;
}

/** The workflow modules that code outside `src/workflows` may import by value: definitions, no workflow code. */
const CLIENT_FACING = ['src/workflows/messages.ts', 'src/workflows/search-attributes.ts'];

describe('src/ imports', () => {
  const cruised = cruiseSrc();

  // Clients (cli, api, activities, workers) start workflows by type name with `import type`, and import messages,
  // ids and search attributes from messages.ts and search-attributes.ts: never a workflow implementation by value.
  it('of workflow modules from outside src/workflows are of messages.ts and search-attributes.ts only', async () => {
    const { modules } = await cruised;
    const offences = modules
      .filter((m) => m.source.startsWith('src/') && !m.source.startsWith('src/workflows/'))
      .flatMap((m) =>
        m.dependencies
          .filter((d) => d.resolved.startsWith('src/workflows/') && !CLIENT_FACING.includes(d.resolved))
          .map((d) => `${m.source} → ${d.resolved}`),
      );
    expect(offences).toEqual([]);
  }, 120_000);

  // Value imports only: `import type` / `export type` close no circle at run time and are allowed to.
  it('form no circles (dependency-cruiser no-circular)', async () => {
    const { summary } = await cruised;
    const circles = summary.violations
      .filter((v) => v.rule.name === 'no-circular')
      .map((v) => [v.from, ...(v.cycle ?? []).map((step) => step.name)].join(' → '));
    expect(circles).toEqual([]);
  }, 120_000);
});
