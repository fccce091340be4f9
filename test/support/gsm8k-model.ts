import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { goldAnswer } from '../../environments/gsm8k/index.js';
import type { Responder } from './scripted-openai.js';

/** The GSM8K test split the tests read: the copy that ships with the gsm8k environment. */
export const GSM8K_TEST = fileURLToPath(new URL('../../environments/gsm8k/data/test.jsonl', import.meta.url));

/** Questions of the test split, in file order, with their gold answers. */
export function gsm8kItems(): { question: string; answer: number }[] {
  return readFileSync(GSM8K_TEST, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as { question: string; answer: string })
    .map((row) => ({ question: row.question, answer: goldAnswer(row.answer) }));
}

/**
 * A scripted model for GSM8K: for each question, `correct(itemIndex, sample)` decides whether that sample
 * boxes the gold answer or a wrong one.
 */
export function gsm8kResponder(correct: (itemIndex: number, sample: number) => boolean, delayMs = 0): Responder {
  const items = gsm8kItems();
  const indexOf = new Map(items.map((item, i) => [item.question, i]));
  return (body) => {
    const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
    const question = String(messages.find((m) => m.role === 'user')?.content ?? '');
    const index = indexOf.get(question);
    if (index === undefined) return { status: 400, body: { error: { message: `unknown question: ${question.slice(0, 40)}` } } };
    const gold = items[index]!.answer;
    const choices = Array.from({ length: body.n ?? 1 }, (_, sample) => ({
      text: correct(index, sample) ? `Let me work it out. The answer is \\boxed{${gold}}.` : `I think it is \\boxed{${gold + 1}}.`,
    }));
    return { choices, delayMs };
  };
}

/**
 * `clotho <command> gsm8k` on the shipped test split, asking the model at `baseUrl`; `flags` are the command's other
 * flags by name (`{ 'env.group_size': 2, store }`), written as `--name value` in their order.
 */
export function gsm8kCommand(command: string, baseUrl: string, flags: Record<string, string | number | boolean>): string[] {
  const all = { 'env.data_path': GSM8K_TEST, 'openai.base_url': baseUrl, ...flags };
  return [command, 'gsm8k', ...Object.entries(all).flatMap(([name, value]) => [`--${name}`, String(value)])];
}
