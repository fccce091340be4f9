// The guides' runnable blocks (```sh runnable), run as written against the suite's Temporal dev server and a scripted
// model, their output checked against the ```text output block that follows when there is one. Each block runs in a
// folder of its own under .clotho/ (inside the package, so that a page's own environment file imports 'clotho' as an
// installed one would), with the code samples its page includes written there, as the page tells the reader to.
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClotho } from '../support/cli.js';
import { gsm8kItems, gsm8kResponder } from '../support/gsm8k-model.js';
import { temporalEnv } from '../support/runs.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { repoRoot } from '../../src/store/paths.js';
import { docsDir, fencesOf, guidePages, missingOutput, runnableBlocks, shellWords } from './blocks.js';

const blocks = guidePages().flatMap(runnableBlocks);
const scratch = join(repoRoot, '.clotho', 'docs-blocks');

/** The commands that ask a model: the scripted one stands in for the model the guide starts or names. */
const ASKS_A_MODEL = new Set(['process', 'serve', 'evaluate']);

// GSM8K's questions answered as the suite's GSM8K tests do (the first sample right); any other question gets a number.
const gsm8k = gsm8kResponder((_, sample) => sample === 0);
const gsm8kQuestions = new Set(gsm8kItems().map((item) => item.question));
const responder: Responder = (body, callIndex) => {
  const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
  const question = String(messages.find((m) => m.role === 'user')?.content ?? '');
  if (gsm8kQuestions.has(question)) return gsm8k(body, callIndex);
  return { choices: Array.from({ length: body.n ?? 1 }, (_, sample) => ({ text: `It is ${4 + sample}.` })) };
};

let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ responder });
});
afterAll(async () => {
  await model?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('the guides’ runnable blocks', () => {
  it('are there, each running only `npx clotho …`', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    for (const block of blocks)
      for (const command of block.commands) expect(command, `${block.page}:${block.line}`).toMatch(/^npx clotho( |$)/);
  });

  it('check every output a guide shows as a command’s (```text output right after a runnable block)', () => {
    for (const page of guidePages()) {
      const shown = fencesOf(page).filter((fence) => fence.info === 'text output').length;
      expect(blocks.filter((b) => b.page === page && b.output).length, page).toBe(shown);
    }
  });

  it.each(blocks.map((b) => [`${b.page}:${b.line}`, b] as const))('%s', async (where, block) => {
    const cwd = join(scratch, where.replace(/[/:]/g, '-'));
    await rm(cwd, { recursive: true, force: true });
    await mkdir(cwd, { recursive: true });
    for (const snippet of block.snippets) await copyFile(join(docsDir, snippet), join(cwd, basename(snippet)));
    let stdout = '';
    for (const command of block.commands) {
      const args = shellWords(command).slice(2);
      const asksModel = ASKS_A_MODEL.has(args[0] ?? '') && !args.includes('--help') && !args.includes('--atropos');
      const result = await runClotho(asksModel ? [...args, '--openai.base_url', model.baseUrl] : args, { ...temporalEnv(), CLOTHO_HOME: cwd }, { cwd });
      expect(result.code, `${where}: ${command}\n${result.stderr}`).toBe(0);
      stdout += result.stdout;
    }
    if (block.output) expect(missingOutput(block.output, stdout), `${where}: the output shown is not what ran:\n${stdout}`).toBeNull();
  });
});
