/**
 * Every way to bring an environment to `clotho process|serve|evaluate|worker`, as `clotho --help`, each of those
 * commands' help and `clotho list` name them: the form on the command line, then what it is. A new way (such as
 * `--verifiers`) is one more row here, and every help text lists it.
 */
export const ENVIRONMENT_SOURCES: readonly (readonly [form: string, what: string])[] = [
  ['<name>', 'a built-in environment (clotho list names them)'],
  ['./my-env.ts', 'a TypeScript environment of yours: a file whose default export is defineEnvironment({...})'],
  ['<npm package>', 'an installed npm package whose default export is one'],
  ['--atropos env.py[:Class]', "an Atropos environment (a BaseEnv subclass in Python), with Atropos's own flags"],
  ['--verifiers <env>', "a verifiers environment (an installed module id or a folder), with verifiers' own flags"],
];

/** {@link ENVIRONMENT_SOURCES} (or some of them) as aligned lines under a heading. */
export function environmentSourcesHelp(heading = 'An environment is one of:', sources = ENVIRONMENT_SOURCES): string {
  const width = Math.max(...sources.map(([form]) => form.length));
  return [heading, ...sources.map(([form, what]) => `  ${form.padEnd(width)}  ${what}`)].join('\n');
}
