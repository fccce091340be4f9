/** Problems past this many are counted, not listed: one broken file should not flood the terminal. */
const MAX_LISTED = 10;

/**
 * One error for everything wrong with some data, so that a user fixes a file in one pass: `heading:`, then the first
 * ten problems one a line, indented, and how many more there are.
 *
 * ```ts
 * if (problems.length > 0) throw problemsError(`invalid data in ${path}`, problems);
 * ```
 */
export function problemsError(heading: string, problems: readonly string[]): Error {
  const more = problems.length > MAX_LISTED ? `\n  … and ${problems.length - MAX_LISTED} more` : '';
  return new Error(`${heading}:\n  ${problems.slice(0, MAX_LISTED).join('\n  ')}${more}`);
}
