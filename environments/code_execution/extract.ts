import { stripThinking } from 'clotho';

/** The code a model wrote, and where it was found. */
export interface ExtractedCode {
  code: string;
  /** It came from a fenced block (otherwise the whole reply, or nothing). */
  fenced: boolean;
}

// Tags of blocks that may hold the program; a block tagged as another language (```bash, ```text) is never run.
const PYTHON_TAGS = new Set(['', 'python', 'python3', 'py', 'py3']);

/** Fenced blocks of a reply, in order, with their language tag; a last fence left open (a reply cut off) runs to the end. */
function fencedBlocks(text: string): { tag: string; body: string }[] {
  const blocks: { tag: string; body: string }[] = [];
  const fence = /^([ \t]*)```[ \t]*([^\n`]*)\n/gm;
  for (let open = fence.exec(text); open; open = fence.exec(text)) {
    const start = open.index + open[0].length;
    const close = /^[ \t]*```[ \t]*$/m.exec(text.slice(start));
    const body = close ? text.slice(start, start + close.index) : text.slice(start);
    // A fence indented in a list item indents its lines too; Markdown (and Python) read them without that indent.
    const indent = open[1]!.length;
    const dedented = indent === 0 ? body : body.replace(new RegExp(`^[ \\t]{0,${indent}}`, 'gm'), '');
    blocks.push({ tag: (open[2] ?? '').trim().split(/\s+/)[0]!.toLowerCase(), body: dedented });
    if (!close) break;
    fence.lastIndex = start + close.index + close[0].length;
  }
  return blocks;
}

const definesFunction = (code: string, name: string): boolean =>
  new RegExp(`^[ \\t]*(?:async[ \\t]+)?def[ \\t]+${name.replace(/[^\w]/g, '')}[ \\t]*\\(`, 'm').test(code);

/**
 * The program in a model's reply: of its Python (or untagged) fenced blocks the last one that defines `entryPoint`,
 * else the last one; a reply without any fence is taken whole. Only the text after a closed `</think>` counts, and a
 * reasoning block left open yields no code.
 */
export function extractCode(completion: string, entryPoint: string): ExtractedCode {
  const text = stripThinking(completion);
  if (text === null) return { code: '', fenced: false };
  const blocks = fencedBlocks(text);
  if (blocks.length === 0) return { code: text.trim() === '' ? '' : text, fenced: false };
  const python = blocks.filter((b) => PYTHON_TAGS.has(b.tag));
  const chosen = python.findLast((b) => definesFunction(b.body, entryPoint)) ?? python.at(-1);
  return chosen ? { code: chosen.body, fenced: true } : { code: '', fenced: false };
}
