/**
 * Pairwise judging with a judge model (RLAIF): prompts that show two responses to one conversation, the judge's
 * `\boxed{A}` / `\boxed{B}` verdicts read back, and votes turned into preferences. Each comparison is asked twice,
 * with the responses in both orders, so that a judge that favours a position favours both responses equally.
 * Pure functions, shared by environments that use the `judge` hook.
 */
import type { Message } from '../../schema/scored-data.js';
import { lastBoxed, stripThinking } from '../../env/answers.js';
import type { JudgeRequest } from '../../env/define.js';

/** The judge's standing instructions: how to read the comparison and how to answer. */
export const PAIRWISE_JUDGE_SYSTEM_PROMPT =
  'You compare two responses to the same conversation and decide which one is better by the criteria you are given. ' +
  'Which response comes first, and how long it is, are no merits of its own: weigh what each says. ' +
  'You may reason before you decide; put that reasoning inside <think> </think>. ' +
  'End your reply with your verdict, exactly \\boxed{A} or \\boxed{B}. A reply without one is not counted.';

/** One message per line as `role: content`, as the judge reads a conversation. */
export function formatConversation(messages: Message[]): string {
  return messages.map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')}`).join('\n');
}

/** What {@link pairwiseJudgePrompt} asks the judge about: a conversation, two responses and the criteria. */
export interface PairwisePromptOptions {
  /** The conversation both responses answer (without the responses). */
  conversation: Message[];
  responseA: string;
  responseB: string;
  /** What makes a response better: the preference the judge rewards. */
  criteria: string;
  /** @default PAIRWISE_JUDGE_SYSTEM_PROMPT */
  system?: string;
}

/** The judge's conversation for one ordering: its instructions, then the conversation, both responses and the criteria. */
export function pairwiseJudgePrompt(options: PairwisePromptOptions): Message[] {
  const user = [
    '[Conversation]',
    formatConversation(options.conversation),
    '',
    '[Response A]',
    options.responseA,
    '',
    '[Response B]',
    options.responseB,
    '',
    '[End of responses]',
    '',
    'The better response is the one that best meets these criteria:',
    options.criteria,
    '',
    'Which response is better? Think it over, then answer with \\boxed{A} or \\boxed{B}.',
  ].join('\n');
  return [
    { role: 'system', content: options.system ?? PAIRWISE_JUDGE_SYSTEM_PROMPT },
    { role: 'user', content: user },
  ];
}

/** The ids of a comparison's two requests: the first response shown as A (`forward`), then as B (`reversed`). */
export function pairwiseRequestIds(id: string): { forward: string; reversed: string } {
  return { forward: `${id}/forward`, reversed: `${id}/reversed` };
}

/** The comparison {@link pairwiseRequests} turns into two judge requests, one in each order. */
export interface PairwiseRequestOptions extends Omit<PairwisePromptOptions, 'responseA' | 'responseB'> {
  /** Names the comparison; its requests are `<id>/forward` and `<id>/reversed`. */
  id: string;
  first: string;
  second: string;
  /** Verdicts asked in each order. */
  votes: number;
  maxTokens?: number;
  /** Above 0, so that several votes can differ. */
  temperature?: number;
}

/** The two judge requests of one comparison: `first` shown as A, then the same two swapped, `votes` answers each. */
export function pairwiseRequests(options: PairwiseRequestOptions): [JudgeRequest, JudgeRequest] {
  const ids = pairwiseRequestIds(options.id);
  const { conversation, criteria, system } = options;
  const common = {
    n: options.votes,
    ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  };
  const prompt = (responseA: string, responseB: string) =>
    pairwiseJudgePrompt({ conversation, criteria, responseA, responseB, ...(system === undefined ? {} : { system }) });
  return [
    { id: ids.forward, messages: prompt(options.first, options.second), ...common },
    { id: ids.reversed, messages: prompt(options.second, options.first), ...common },
  ];
}

// `\text{A}`, `\textbf{A}`, …: formatting around the letter, unwrapped.
const FORMATTED = /^\s*\\(?:text|textbf|mathrm|mathbf)\s*\{(.*)\}\s*$/s;

/**
 * The choice a judge's answer gives in its last `\boxed{…}` (`\boxed{A}`, `\boxed{\text{B}}`, `\boxed{Response A}`),
 * read case-insensitively; null when there is none, when it names something else (`\boxed{A or B}`), or when the
 * answer ends inside an unclosed `<think>` (the judge ran out of room before its verdict). Reasoning inside a closed
 * `<think>` block is ignored.
 */
export function parseBoxedChoice(text: string, choices: readonly string[] = ['A', 'B']): string | null {
  const answer = stripThinking(text);
  let boxed = answer === null ? null : lastBoxed(answer);
  if (boxed === null) return null;
  for (let inner = FORMATTED.exec(boxed); inner; inner = FORMATTED.exec(boxed)) boxed = inner[1]!;
  const choice = boxed
    .replace(/^[\s*_"'([]+|[\s*_"')\].]+$/g, '')
    .replace(/^(?:response|option|answer)\s+/i, '')
    .toUpperCase();
  return choices.find((c) => c.toUpperCase() === choice) ?? null;
}

/** The verdicts on one comparison, from both orderings: votes for each response, and answers that gave none. */
export interface PairwiseTally {
  /** Votes for the response shown as A in the forward request. */
  first: number;
  second: number;
  /** Answers without a readable verdict: they count as no preference. */
  unparsed: number;
  /** All answers. */
  votes: number;
}

/** Counts the verdicts of a comparison: A in `forward` and B in `reversed` are votes for the first response. */
export function tallyPairwise(forward: string[], reversed: string[]): PairwiseTally {
  const tally: PairwiseTally = { first: 0, second: 0, unparsed: 0, votes: forward.length + reversed.length };
  const count = (answers: string[], choiceForFirst: string) => {
    for (const answer of answers) {
      const choice = parseBoxedChoice(answer);
      if (choice === null) tally.unparsed++;
      else if (choice === choiceForFirst) tally.first++;
      else tally.second++;
    }
  };
  count(forward, 'A');
  count(reversed, 'B');
  return tally;
}

/** The tally of comparison `id` from a group's `judgements`; null when that comparison was not asked. */
export function judgedPair(judgements: Record<string, string[]>, id: string): PairwiseTally | null {
  const ids = pairwiseRequestIds(id);
  const forward = judgements[ids.forward];
  const reversed = judgements[ids.reversed];
  if (!forward && !reversed) return null;
  return tallyPairwise(forward ?? [], reversed ?? []);
}

/**
 * The share of a comparison's votes that prefer one side, with answers that gave no verdict split evenly between the
 * two: 1 when every vote prefers it, 0.5 for no preference (or no votes). Minus 0.5, it is Atropos's centred RLAIF
 * score: (votes for − votes against) / (2 × votes).
 */
export function preferenceOf(tally: PairwiseTally, side: 'first' | 'second' = 'first'): number {
  if (tally.votes === 0) return 0.5;
  return (tally[side] + tally.unparsed / 2) / tally.votes;
}
