import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

/**
 * What imports may do is dependency-cruiser's (`.dependency-cruiser.cjs`, run by `npm run lint`: the layers, the
 * workflow sandbox, the environments' public entry) and ESLint's (no Node built-ins in workflow files). Here: that
 * those rules do report a broken layer, and the one rule about workflow code that no import graph shows.
 */
const folder = new URL('./', import.meta.url);
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('workflow files', () => {
  // index.ts states the rule: a local activity's result can arrive at another point on replay than when it
  // first ran, so only workflows that never have two branches issuing commands may use one.
  it('use local activities only in straight-line workflows (rollout-group, verifiers-rollout-group), never beside other branches', async () => {
    const files = (await readdir(folder)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files).toContain('rollout-group.ts');
    const users: string[] = [];
    for (const file of files) {
      if (/\b(stepActivities|proxyLocalActivities)\s*[<(]/.test(await readFile(new URL(file, folder), 'utf8'))) users.push(file);
    }
    // activity-options defines the helper.
    expect(users.sort()).toEqual(['activity-options.ts', 'rollout-group.ts', 'verifiers-rollout-group.ts']);
  });
});

/**
 * A tree that breaks each rule once, and keeps each exception once: file → source. Imports name `.js` files, as
 * Clotho's own do (NodeNext).
 */
const FIXTURE: Record<string, string> = {
  'src/schema/a.ts': "import { c } from '../cli/c.js';\nexport const a = c;", // up from the bottom layer
  'src/schema/fs.ts': "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;",
  'src/schema/pure.ts': 'export const pure = 1;',
  'src/store/p.ts': "import { q } from './q.js';\nexport const p = () => q;",
  'src/store/q.ts': "import { p } from './p.js';\nexport const q = () => p;", // a circle
  'src/env/registry.ts': "export const load = () => import('../../environments/foo/index.js');", // the SDK loads its users
  'src/env/core.ts': "import { deal } from '../kits/cards/deal.js';\nexport const core = () => deal;", // the core, a kit
  'src/kits/cards/deal.ts': "import { pure } from '../../schema/pure.js';\nexport const deal = () => pure;", // allowed
  'src/kits/dice/roll.ts':
    "import { load } from '../../env/registry.js';\nimport { deal } from '../cards/deal.js';\nexport const roll = [load, deal];", // the core: allowed; another kit
  'src/activities/signal.ts': [
    "import { ping } from '../workflows/messages.js';", // allowed: the client-facing definitions
    "import type { run } from '../workflows/run.js';", // allowed: a type is erased
    'export const signal = (r: typeof run) => [ping, r];',
  ].join('\n'),
  'src/workflows/messages.ts': 'export const ping = 1;',
  'src/workflows/run.ts': "import { pure } from '../schema/pure.js';\nexport const run = () => pure;", // allowed
  'src/workflows/reads.ts': "import { read } from '../schema/fs.js';\nexport const reads = read;", // a built-in, through schema
  'src/api/start.ts': "import { run } from '../workflows/run.js';\nexport const start = run;", // a workflow's code
  'src/workers/w.ts': "import { start } from '../api/start.js';\nexport const w = start;", // a sibling layer
  'src/cli/c.ts': "import { w } from '../workers/w.js';\nexport const c = () => w;", // allowed: cli imports all
  'environments/foo/index.ts': [
    "import { pure } from '../../src/schema/pure.js';", // past the public entry
    "import { bar } from '../bar/index.js';", // another environment
    "import { own } from './own.js';", // allowed
    'export default [pure, bar, own];',
  ].join('\n'),
  'environments/foo/own.ts': 'export const own = 1;',
  'environments/bar/index.ts': 'export const bar = 1;',
};

/** The violations `.dependency-cruiser.cjs` finds in {@link FIXTURE}, as `rule: from → to`. */
async function fixtureViolations(): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'clotho-layers-'));
  try {
    for (const [file, source] of Object.entries(FIXTURE)) {
      await mkdir(dirname(join(dir, file)), { recursive: true });
      await writeFile(join(dir, file), `${source}\n`);
    }
    await writeFile(join(dir, 'tsconfig.json'), await readFile(join(root, 'tsconfig.json'), 'utf8'));
    const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
    const tsConfig = extractTSConfig(join(dir, 'tsconfig.json'));
    const result = await cruise(['src', 'environments'], { ...options, baseDir: dir, outputType: 'json' }, undefined, { tsConfig });
    const { summary } = JSON.parse(result.output as string) as ICruiseResult;
    return summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('.dependency-cruiser.cjs', () => {
  it("reports each broken layer, the core and its kits, the workflow sandbox and the environments' door, and nothing the rules allow", async () => {
    expect(await fixtureViolations()).toEqual([
      'environments-public-sdk: environments/foo/index.ts → environments/bar/index.ts',
      'environments-public-sdk: environments/foo/index.ts → src/schema/pure.ts',
      'kits-apart: src/kits/dice/roll.ts → src/kits/cards/deal.ts',
      'layer-schema: src/schema/a.ts → src/cli/c.ts',
      'layer-workers: src/workers/w.ts → src/api/start.ts',
      'no-circular: src/store/p.ts → src/store/q.ts',
      'sdk-above-environments: src/env/registry.ts → environments/foo/index.ts',
      'sdk-core-not-kits: src/env/core.ts → src/kits/cards/deal.ts',
      'workflow-internals: src/api/start.ts → src/workflows/run.ts',
      'workflow-sandbox: src/workflows/reads.ts → fs',
    ]);
  }, 120_000);

  it('states every layer of ARCHITECTURE.md, lowest first (cli, the top, may import them all)', async () => {
    const { ruleSet } = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
    expect(ruleSet!.forbidden!.map((rule) => rule.name)).toEqual([
      'no-circular',
      ...['schema', 'store', 'config', 'inference', 'env', 'activities', 'workflows', 'api', 'workers'].map((l) => `layer-${l}`),
      'workflow-internals',
      'workflow-sandbox',
      'environments-public-sdk',
      'sdk-core-not-kits',
      'kits-apart',
      'sdk-above-environments',
    ]);
  });
});
