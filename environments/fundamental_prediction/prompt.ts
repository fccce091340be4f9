/** The conversation the model sees for one record. */
import type { Message } from 'clotho';
import type { FundamentalRecord } from './data.js';

/** Asks for reasoning inside one `<think>` block before the prediction: the parser requires exactly one. */
export const SYSTEM_PROMPT =
  'You are a financial analyst who reasons carefully before committing to a forecast. Work through the evidence ' +
  'at whatever length you need, weighing the company figures, the news and the macroeconomic picture against each ' +
  'other. Put all of that reasoning inside a single <think> </think> block, then state your final prediction after it.';

/** The one sentence the answer must contain, with placeholders for the direction and the percentage. */
export function answerTemplate(metric: string): string {
  return `The ${metric} will be: {answer} and the magnitude will be: {percentage}%`;
}

/** The task, the exact answer sentence, then the record's context. */
export function userMessage(record: Pick<FundamentalRecord, 'context' | 'fundamental_metric'>): string {
  const metric = record.fundamental_metric;
  return [
    `Using the company data below (fundamentals, news and macroeconomic indicators), forecast how the company's ` +
      `${metric} will change next quarter: will it be raised, maintained or reduced, and by what percentage?`,
    '',
    'End your answer with this sentence, exactly once and in exactly this form:',
    `"${answerTemplate(metric)}"`,
    'where {answer} is one of "maintained", "raised" or "reduced", and {percentage} is the expected percentage ' +
      'change as a number (0 if maintained).',
    '',
    'Data:',
    '',
    record.context,
  ].join('\n');
}

/** System prompt, then the user's task with the record's data. */
export function promptOf(record: FundamentalRecord): Message[] {
  return [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: userMessage(record) },
  ];
}
