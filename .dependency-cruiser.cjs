/**
 * dependency-cruiser's rules for `src/` (checked by `src/workflows/imports.test.ts`; by hand: `npx depcruise src`).
 * One rule for now: no import circles. The graph is what loads at run time: with `tsPreCompilationDeps: false` each
 * file is read as the compiler emits it, so `import type` / `export type` are erased (and may close a circle), while
 * `import { type A }` stays an import (`verbatimModuleSyntax`) and counts.
 */
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
  ],
  options: {
    tsPreCompilationDeps: false,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
  },
};
