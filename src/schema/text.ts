/** Text helpers shared by workflow and activity code: pure, with no imports, so the workflow sandbox may load them. */

/**
 * `text` at most `max` characters long: when longer, its first `max - 1` characters and `…`. Workflow code cuts the
 * summaries it names activities with by it, so its result for a given input must never change.
 */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
