import type { ScoredDataPost } from '../schema/api.js';

/**
 * Posted groups Atropos's API accepts and this API therefore accepts too, though part of them looks wrong. Each kind
 * is counted on `/metrics` (`clotho_groups_irregular_total{kind}`) and logged, so an environment that sends them is
 * noticed without losing its groups.
 */
export const IRREGULAR_KINDS = {
  /** A message whose `content` is neither text, a list of parts nor null (an object, a number). */
  message_content_not_text: 'a message whose content is neither a string, a list of parts nor null',
  /** A message whose `role` is not a string. */
  message_role_not_text: 'a message whose role is not a string',
  /** `advantages` whose rows do not match `tokens` (Atropos's trainer ignores advantages; a per-token trainer cannot use them). */
  advantages_misaligned: 'advantages whose rows do not match tokens in number or length',
  /** `ref_logprobs` whose rows do not match `tokens` (ignored by Atropos's trainer, unusable for a KL term). */
  ref_logprobs_misaligned: 'ref_logprobs whose rows do not match tokens in number or length',
  /** Bools or numeric strings in number fields, taken as numbers as pydantic's lax mode does (`lax-numbers.ts`). */
  numbers_coerced: 'true/false or numeric strings in number fields, taken as numbers',
} as const;
export type IrregularKind = keyof typeof IRREGULAR_KINDS;

type Group = Pick<ScoredDataPost, 'tokens' | 'messages' | 'advantages' | 'ref_logprobs'>;

const misaligned = (rows: number[][] | null, tokens: number[][]) =>
  rows !== null && (rows.length !== tokens.length || rows.some((row, i) => row.length !== tokens[i]!.length));

/** The irregular kinds one posted group shows, each once. */
export function irregularities(group: Group): IrregularKind[] {
  const kinds: IrregularKind[] = [];
  const messages = group.messages?.flat() ?? [];
  if (messages.some((m) => !(typeof m.content === 'string' || Array.isArray(m.content) || m.content === null))) {
    kinds.push('message_content_not_text');
  }
  if (messages.some((m) => typeof m.role !== 'string')) kinds.push('message_role_not_text');
  if (misaligned(group.advantages, group.tokens)) kinds.push('advantages_misaligned');
  if (misaligned(group.ref_logprobs, group.tokens)) kinds.push('ref_logprobs_misaligned');
  return kinds;
}

/** Counts irregular groups of this API process and logs each kind at its 1st, 10th, 100th, ... occurrence. */
export class IrregularInput {
  readonly counts: Partial<Record<IrregularKind, number>> = {};

  constructor(private readonly warn: (line: string) => void = (line) => console.warn(line)) {}

  /** Counts `groups`; `coerced[i]` says group i had its numbers made lax. */
  record(groups: readonly Group[], coerced: readonly boolean[] = []): void {
    for (const [i, group] of groups.entries()) {
      for (const kind of [...irregularities(group), ...(coerced[i] ? (['numbers_coerced'] as const) : [])]) {
        const n = (this.counts[kind] ?? 0) + 1;
        this.counts[kind] = n;
        if (/^10*$/.test(String(n))) {
          this.warn(
            `clotho api: accepted ${n === 1 ? 'a group' : `${n} groups`} with ${IRREGULAR_KINDS[kind]} (Atropos accepts ` +
              `them too); counted in clotho_groups_irregular_total{kind="${kind}"}`,
          );
        }
      }
    }
  }
}
