import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Message } from '../schema/scored-data.js';

const escape = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const contentText = (content: Message['content']) => (typeof content === 'string' ? content : JSON.stringify(content, null, 2));

interface ShownToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** One message as the page shows it: the assistant's tool calls and per-turn reward beside its text. */
function renderMessage(m: Message, turn: number | null): string {
  const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []) as ShownToolCall[];
  const label = m.role === 'tool' ? `tool${typeof m.name === 'string' ? ` · ${m.name}` : ''}` : m.role;
  const heading = [turn === null ? '' : `turn ${turn}`, label, typeof m.reward === 'number' ? `reward ${m.reward}` : '']
    .filter(Boolean)
    .join(' · ');
  const text = contentText(m.content);
  const body = text === '' && calls.length > 0 ? '' : `<pre>${escape(text)}</pre>`;
  const shown = calls
    .map((c) => `<pre class="call">→ ${escape(c.function?.name ?? '?')}(${escape(c.function?.arguments ?? '')})</pre>`)
    .join('');
  return `<div class="msg ${escape(m.role)}"><b>${escape(heading)}</b>${body}${shown}</div>`;
}

interface ShownGroup {
  scores: number[];
  messages: Message[][] | null;
  /** Absent from a messages-only group, which counts `completion_tokens` instead (null: the server did not say). */
  tokens?: number[][];
  messages_only?: boolean;
  completion_tokens?: number[] | null;
  overrides?: Record<string, unknown>[] | null;
}

/** What a sequence's length is: its tokens, or in a messages-only group the completion tokens the server counted. */
function lengthFact(group: ShownGroup, i: number): string {
  if (!group.messages_only) return `${group.tokens?.[i]?.length ?? 0} tokens`;
  const counted = group.completion_tokens?.[i];
  return counted === undefined ? 'completion tokens not counted per sequence' : `${counted} completion tokens`;
}

function renderGroup(line: string, index: number): string {
  const group = JSON.parse(line) as ShownGroup;
  const samples = group.scores.map((score, i) => {
    const messages = group.messages?.[i] ?? [];
    let turn = -1;
    const body = messages.map((m) => renderMessage(m, m.role === 'assistant' ? ++turn : turn >= 0 ? turn : null)).join('');
    const tone = score > 0 ? 'good' : score < 0 ? 'bad' : 'flat';
    const toolCalls = messages.filter((m) => m.role === 'tool').length;
    const facts = [
      `score ${score}`,
      `${turn + 1} turns`,
      ...(toolCalls > 0 ? [`${toolCalls} tool calls`] : []),
      lengthFact(group, i),
      ...(group.overrides?.[i]?.set_advantage_to_zero ? ['truncated'] : []),
    ];
    return `<details><summary class="${tone}">sample ${i} · ${facts.join(' · ')}</summary>${body}</details>`;
  });
  const kind = group.messages_only ? ' · messages only (no tokens: not training data)' : '';
  return `<section><h2>group ${index} · scores ${escape(group.scores.join(', '))}${kind}</h2>${samples.join('')}</section>`;
}

/** Writes an HTML page beside a JSONL of scored groups: each episode turn by turn, its tool calls, results and rewards. */
export async function writeGroupsHtml(jsonlPath: string, htmlPath: string, title: string): Promise<void> {
  const sections: string[] = [];
  const lines = createInterface({ input: createReadStream(jsonlPath), crlfDelay: Infinity });
  for await (const line of lines) if (line.trim()) sections.push(renderGroup(line, sections.length));
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title><style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}section{border-top:1px solid #ccc;padding:.5rem 0}
pre{white-space:pre-wrap;margin:.25rem 0 .75rem}.msg{padding-left:1rem;border-left:3px solid #ddd}.assistant{border-color:#69c}
.tool{border-color:#c90}.call{color:#036}.good{color:#070}.bad{color:#a00}.flat{color:#666}summary{cursor:pointer}</style></head>
<body><h1>${escape(title)}</h1><p>${sections.length} groups</p>${sections.join('\n')}</body></html>`;
  await writeFile(htmlPath, page);
}
