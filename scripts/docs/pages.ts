import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The site's source folder. */
export const docs = fileURLToPath(new URL('../../docs/', import.meta.url));

/** Writes `text` to `docs/<path>`, making its folder. */
export async function writePage(path: string, text: string): Promise<void> {
  const file = join(docs, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text.endsWith('\n') ? text : `${text}\n`);
}

/** Generated pages are rebuilt whole: a command or environment removed leaves no page behind. */
export async function clean(path: string): Promise<void> {
  await rm(join(docs, path), { recursive: true, force: true });
}

/**
 * Prose as Markdown for a table cell that VitePress shows as written: outside inline code, `<`, `>` and `&` would be
 * HTML (Vue) to it; `|` would end the cell, in code too. (`{{`, a Vue interpolation even in code, is for `vPre`.)
 */
export const markdownText = (text: string): string =>
  text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')))
    .join('')
    .replace(/\|/g, '\\|');

/** A page whose text Vue must not read: `{{ … }}` in it (in code too) stays as written. */
export const vPre = (markdown: string): string => `::: v-pre\n${markdown.trimEnd()}\n:::`;

/** A fenced block of plain text (help output): shown as is, never read as Markdown. */
export const textBlock = (text: string): string => ['```text', text.trimEnd(), '```'].join('\n');
