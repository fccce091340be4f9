import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Message } from '../schema/scored-data.js';

const escape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const contentText = (content: Message['content']) =>
  typeof content === 'string' ? content : JSON.stringify(content, null, 2);

function renderGroup(line: string, index: number): string {
  const group = JSON.parse(line) as { scores: number[]; messages: Message[][] | null; tokens: number[][] };
  const samples = group.scores.map((score, i) => {
    const messages = group.messages?.[i] ?? [];
    const body = messages
      .map((m) => `<div class="msg ${escape(m.role)}"><b>${escape(m.role)}</b><pre>${escape(contentText(m.content))}</pre></div>`)
      .join('');
    const tone = score > 0 ? 'good' : score < 0 ? 'bad' : 'flat';
    return `<details><summary class="${tone}">sample ${i} · score ${score} · ${group.tokens[i]?.length ?? 0} tokens</summary>${body}</details>`;
  });
  return `<section><h2>group ${index} · scores ${escape(group.scores.join(', '))}</h2>${samples.join('')}</section>`;
}

/** Writes an HTML page beside a JSONL of scored groups, showing each group's messages and scores. */
export async function writeGroupsHtml(jsonlPath: string, htmlPath: string, title: string): Promise<void> {
  const sections: string[] = [];
  const lines = createInterface({ input: createReadStream(jsonlPath), crlfDelay: Infinity });
  for await (const line of lines) if (line.trim()) sections.push(renderGroup(line, sections.length));
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title><style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}section{border-top:1px solid #ccc;padding:.5rem 0}
pre{white-space:pre-wrap;margin:.25rem 0 .75rem}.msg{padding-left:1rem;border-left:3px solid #ddd}.assistant{border-color:#69c}
.good{color:#070}.bad{color:#a00}.flat{color:#666}summary{cursor:pointer}</style></head>
<body><h1>${escape(title)}</h1><p>${sections.length} groups</p>${sections.join('\n')}</body></html>`;
  await writeFile(htmlPath, page);
}
