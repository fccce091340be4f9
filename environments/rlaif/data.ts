import { loadTable, problemsError, type Message } from 'clotho';

/** One prompt: the conversation the policy answers, and a reference answer when the data has one. */
export interface RlaifItem {
  /** Ends with a user turn. */
  prompt: Message[];
  /** The data's own answer: the `reference_field` column, else the conversation's final assistant turn; null without. */
  reference: string | null;
}

export interface RowFields {
  /** A column holding a prompt string or a conversation (a list of `{role, content}`, as WildChat's `conversation`). */
  promptField: string;
  /** A column holding a reference answer; null: the conversation's own final assistant turn. */
  referenceField: string | null;
}

const isTurn = (value: unknown): value is { role: string; content: string } =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { role?: unknown }).role === 'string' &&
  typeof (value as { content?: unknown }).content === 'string';

/**
 * A data row as an item. A conversation's trailing assistant turns are cut off (the policy writes that turn), and the
 * last of them is the reference; only `role` and `content` of each turn are kept (WildChat's turns carry more).
 * @throws Error saying what is wrong with the row.
 */
export function itemFromRow(row: Record<string, unknown>, fields: RowFields): RlaifItem {
  const value = row[fields.promptField];
  let prompt: Message[];
  let reference: string | null = null;
  if (typeof value === 'string') {
    prompt = [{ role: 'user', content: value }];
  } else if (Array.isArray(value)) {
    const bad = value.findIndex((turn) => !isTurn(turn));
    if (bad >= 0) throw new Error(`${fields.promptField}[${bad}]: expected {role, content} with string values`);
    prompt = value.map((turn: { role: string; content: string }) => ({ role: turn.role, content: turn.content }));
    while (prompt.at(-1)?.role === 'assistant') {
      const answer = prompt.pop()!;
      reference ??= String(answer.content);
    }
  } else {
    throw new Error(
      `${fields.promptField}: expected a prompt string or a list of {role, content}, got ${value === undefined ? 'no such column' : typeof value}`,
    );
  }
  if (!prompt.some((m) => m.role === 'user')) throw new Error(`${fields.promptField}: no user turn to answer`);
  if (fields.referenceField !== null) {
    const given = row[fields.referenceField];
    if (given !== null && given !== undefined && typeof given !== 'string') {
      throw new Error(`${fields.referenceField}: expected a string or null, got ${typeof given}`);
    }
    reference = given ?? null;
  }
  return { prompt, reference };
}

/**
 * Reads the prompts of a JSONL or Parquet file (by its extension). Every row is checked; the first ten bad rows are
 * reported by number at once.
 */
export async function loadItems(path: string, fields: RowFields): Promise<RlaifItem[]> {
  const rows = await loadTable(path);
  const items: RlaifItem[] = [];
  const problems: string[] = [];
  rows.forEach((row, i) => {
    try {
      items.push(itemFromRow(row, fields));
    } catch (error) {
      problems.push(`row ${i + 1}: ${(error as Error).message}`);
    }
  });
  if (problems.length > 0) throw problemsError(`invalid prompts in ${path}`, problems);
  if (items.length === 0) throw new Error(`no prompts in ${path}`);
  return items;
}
