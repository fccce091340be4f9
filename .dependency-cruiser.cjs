/**
 * dependency-cruiser's rules: the layers of `src/` (ARCHITECTURE.md, Layers), the SDK's core and its kits, the workflow
 * sandbox and the environments' one door into Clotho. `npm run lint` runs `depcruise src environments --config .dependency-cruiser.cjs`;
 * `src/workflows/imports.test.ts` checks that a broken rule is reported.
 *
 * The graph is what loads at run time: with `tsPreCompilationDeps: false` each file is read as the compiler emits it,
 * so `import type` / `export type` are erased (a layer may name any layer's types), while `import { type A }` stays an
 * import (`verbatimModuleSyntax`) and counts. Tests are not cruised.
 */

/** The layers, lowest first: a layer imports only itself and the layers before it. `api` and `workers` share a rank. */
const LAYERS = [
  ['schema', '^src/schema/'],
  ['store', '^src/store/'],
  ['config', '^src/config/'],
  ['inference', '^src/inference/'],
  // The SDK: its core (src/env), its kits (src/kits/<kit>) and its public entry.
  ['env', '^src/(env|kits)/|^src/index\\.ts$'],
  ['activities', '^src/activities/'],
  ['workflows', '^src/workflows/'],
  ['api', '^src/api/'],
  ['workers', '^src/workers/'],
  ['cli', '^src/cli/'],
];
const rank = { schema: 0, store: 1, config: 2, inference: 3, env: 4, activities: 5, workflows: 6, api: 7, workers: 7, cli: 8 };
const pathOf = (name) => LAYERS.find(([n]) => n === name)[1];

/** What clients may import of the workflows by value: definitions (messages, ids, search attributes), no workflow code. */
const CLIENT_FACING = '^src/workflows/(messages|search-attributes)\\.ts$';

// cli, the top layer, may import every layer.
const layerRules = LAYERS.filter(([name]) => name !== 'cli').map(([name, path]) => {
  const above = LAYERS.filter(([other]) => other !== name && rank[other] >= rank[name]).map(([other]) => pathOf(other));
  return {
    name: `layer-${name}`,
    severity: 'error',
    comment:
      `${name} imports only the layers below it (schema < store < config < inference < env < activities < workflows < api, ` +
      'workers < cli); a type from above is `import type`. Move the code to the layer it belongs to.',
    from: { path },
    to: {
      path: above.join('|'),
      // Activities signal and query workflows: the client-facing definitions are theirs to import.
      ...(name === 'activities' ? { pathNot: CLIENT_FACING } : {}),
    },
  };
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that load each other at run time. Break the circle, or make one of its edges `import type`.',
      from: {},
      to: {
        circular: true,
        dependencyTypesNot: ['type-only'],
        viaOnly: { dependencyTypesNot: ['type-only'] },
      },
    },
    ...layerRules,
    {
      name: 'workflow-internals',
      severity: 'error',
      comment:
        'Clients (activities, api, workers, cli) import messages.ts and search-attributes.ts of the workflows by value, ' +
        "and start a workflow by type name with its function's type (`import type`): never a workflow's code.",
      from: { path: '^src/', pathNot: '^src/workflows/' },
      to: { path: '^src/workflows/', pathNot: CLIENT_FACING },
    },
    {
      name: 'workflow-sandbox',
      severity: 'error',
      comment:
        "Workflow code runs in Temporal's sandbox: it may load only workflow modules, schema modules and " +
        '@temporalio/workflow and /common, directly or through what it imports. A Node built-in or activity code ' +
        'passes the compiler and then crash-loops the worker.',
      from: { path: '^src/workflows/' },
      to: {
        reachable: true,
        pathNot: '^(src/workflows/|src/schema/|node_modules/@temporalio/(workflow|common)/)',
      },
    },
    {
      name: 'environments-public-sdk',
      severity: 'error',
      comment:
        "An environment imports Clotho only through its public entry ('clotho'), so it works unchanged in a user's " +
        "own package: no path into src/, and no other environment's files.",
      from: { path: '^environments/([^/]+)/' },
      to: { path: '^(src/|environments/)', pathNot: '^environments/$1/' },
    },
    {
      name: 'sdk-core-not-kits',
      severity: 'error',
      comment:
        "The SDK's core does not know its kits (games, sandbox, judging, images): a kit imports the core, and only the " +
        'public entry (src/index.ts) brings them together. Move what the core needs out of the kit into the core.',
      from: { path: '^src/env/' },
      to: { path: '^src/kits/' },
    },
    {
      name: 'kits-apart',
      severity: 'error',
      comment: 'Each kit stands on the core alone: what two kits share belongs in the core.',
      from: { path: '^src/kits/([^/]+)/' },
      to: { path: '^src/kits/', pathNot: '^src/kits/$1/' },
    },
    {
      name: 'sdk-above-environments',
      severity: 'error',
      comment: 'The SDK does not know its users: only the CLI loads the built-in environments.',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^environments/' },
    },
  ],
  options: {
    tsPreCompilationDeps: false,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
};
