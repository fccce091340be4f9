/**
 * The payload budget (issue 38): workflow history holds store keys and scalars, and what would break that fails at
 * once with its size, rather than later at Temporal's limit. No imports: workflow code loads this module.
 */

/**
 * The most a value Clotho puts in workflow history (an activity's answer, a workflow's input) may weigh, in bytes of
 * JSON: Temporal warns past 512 KB and refuses a payload past 2 MB. The Atropos worker keeps to the same budget
 * (`clients/python-atropos`, `PAYLOAD_BUDGET_BYTES` in its activities).
 */
export const PAYLOAD_BUDGET_BYTES = 512 * 1024;

/** Bytes of `value`'s JSON (UTF-8). */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? '').length;
}
