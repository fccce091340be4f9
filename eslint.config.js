// ESLint for the whole repository (`npm run lint`): typescript-eslint's recommended rules, type-aware, plus the rules
// that catch the bugs this codebase can have. Import layers are dependency-cruiser's (`.dependency-cruiser.cjs`).
import js from '@eslint/js';
import { builtinModules } from 'node:module';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/',
      'dist/',
      '.clotho/',
      '**/data/',
      'test/replay/histories/',
      'clients/',
      'docs/.generated/',
      'docs/.vitepress/dist/',
      'docs/.vitepress/cache/',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { project: ['./tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its error (an unhandled rejection kills the process) and, in workflow code,
      // its ordering. `void promise` states that it is meant.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where nothing awaits it: an async callback of `setTimeout` or `emitter.on`, whose rejection nobody
      // handles; a promise tested as a condition (always true).
      '@typescript-eslint/no-misused-promises': 'error',
      // `_` names what is left unused on purpose (a rest sibling, a callback's argument), as tsc's noUnused* allows.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests read JSON bodies and poke at internals: `any` there is a test's shorthand, not a hole in a typed API.
    files: ['**/*.test.ts', 'test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain JavaScript and files outside tsconfig.json: no type information.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs', 'vitest.config.ts'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // Workflow code runs in Temporal's sandbox: a Node built-in imported by value passes the compiler and then
    // crash-loops the worker. (dependency-cruiser states what else a workflow file may import.)
    files: ['src/workflows/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: builtinModules
            .flatMap((m) => [m, `node:${m}`])
            .map((name) => ({
              name,
              allowTypeImports: true,
              message: 'Workflow code runs in the Temporal sandbox: no Node built-ins (use an activity).',
            })),
        },
      ],
    },
  },
);
