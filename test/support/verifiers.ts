import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ensureVerifiersPython } from '../../src/cli/verifiers/python.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import type { Responder, ScriptedBody, ScriptedChoice } from './scripted-openai.js';

/** The verifiers-style environments written for clients/python-verifiers's tests (never verifiers' own repository). */
export const VERIFIERS_ENVS = fileURLToPath(new URL('../../clients/python-verifiers/tests/envs/', import.meta.url));

/**
 * The Python that runs the verifiers worker (installing the project's venv when missing, as the CLI does), and the
 * environment the CLI needs to run it offline: no Hub, no telemetry.
 */
export async function verifiersPython(): Promise<{ python: string; env: Record<string, string> }> {
  const python = await ensureVerifiersPython(() => undefined);
  return { python, env: { CLOTHO_VERIFIERS_PYTHON: python, HF_HUB_OFFLINE: '1', WANDB_MODE: 'disabled' } };
}

/** One turn of a scripted episode: what the conversation so far holds, as the model sees it. */
export interface VerifiersTurn {
  /** The last user message's text. */
  prompt: string;
  /** Tool results so far, in order. */
  toolResults: string[];
  /** The whole conversation as text (a token-id prompt decoded), for finding anything else. */
  text: string;
}

/** What the model answers a turn with: text, or one tool call (a Hermes `<tool_call>` block when prompts are token ids). */
export type VerifiersAnswer = { text: string } | { tool: string; arguments: Record<string, unknown> };

/**
 * A scripted policy for verifiers episodes that answers the same whether asked by messages (vf-eval, a messages-only
 * run: tool calls as OpenAI's `tool_calls`) or by token ids (a session with the policy's tokenizer, Qwen's here: the
 * prompt decoded, the answer's ids Qwen's, ended by its end-of-turn token, tool calls as Hermes blocks).
 */
export async function verifiersPolicy(answer: (turn: VerifiersTurn, call: number) => VerifiersAnswer): Promise<Responder> {
  const qwen = await loadTokenizer('qwen3');
  return (body, call) => ({ choices: [choiceOf(qwen, body, answer(turnOf(qwen, body), call))] });
}

/** A chat request's conversation; undefined for a completions request (a token-id prompt). */
const messagesOf = (body: ScriptedBody) => (body as { messages?: { role: string; content?: unknown }[] }).messages;

function turnOf(qwen: Tokenizer, body: ScriptedBody): VerifiersTurn {
  const messages = messagesOf(body);
  if (messages) {
    const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content ?? ''));
    const users = messages.filter((m) => m.role === 'user');
    return {
      prompt: text(users.at(-1)?.content),
      toolResults: messages.filter((m) => m.role === 'tool').map((m) => text(m.content)),
      text: messages.map((m) => text(m.content)).join('\n'),
    };
  }
  const { prompt } = body as { prompt: string | number[] };
  const text = typeof prompt === 'string' ? prompt : qwen.decode(prompt);
  const users = [...text.matchAll(/<\|im_start\|>user\n([\s\S]*?)<\|im_end\|>/g)].map((m) => m[1]!);
  const results = users.flatMap((u) => [...u.matchAll(/<tool_response>\n?([\s\S]*?)\n?<\/tool_response>/g)].map((m) => m[1]!.trim()));
  const prompts = users.filter((u) => !u.includes('<tool_response>'));
  return { prompt: prompts.at(-1) ?? '', toolResults: results, text };
}

function choiceOf(qwen: Tokenizer, body: ScriptedBody, answer: VerifiersAnswer): ScriptedChoice {
  if (messagesOf(body)) {
    if ('text' in answer) return { text: answer.text };
    const id = `call_${answer.tool}`;
    return {
      text: '',
      toolCalls: [{ id, type: 'function', function: { name: answer.tool, arguments: JSON.stringify(answer.arguments) } }],
    };
  }
  const text =
    'text' in answer ? answer.text : `<tool_call>\n${JSON.stringify({ name: answer.tool, arguments: answer.arguments })}\n</tool_call>`;
  const tokenIds = [...qwen.encode(text, { addSpecialTokens: false }), qwen.eos!.id];
  return { text, tokenIds, logprobs: tokenIds.map((_, i) => -((i % 7) + 1) / 8) };
}

/** Every live descendant of `pid` with its command line (a verifiers worker's namespace: bwrap, Python, its programs). */
export function descendants(pid: number): { pid: number; args: string }[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .flatMap((line) => {
      const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
      // Zombies have exited: only their parent's wait is left.
      return match && !match[3]!.startsWith('Z') ? [{ pid: Number(match[1]), ppid: Number(match[2]), args: match[4]! }] : [];
    });
  const found: { pid: number; args: string }[] = [];
  const walk = (parent: number) => {
    for (const row of rows.filter((r) => r.ppid === parent)) {
      found.push({ pid: row.pid, args: row.args });
      walk(row.pid);
    }
  };
  walk(pid);
  return found;
}

/** Whether process `pid` runs (a zombie has exited). */
export function isAlive(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
