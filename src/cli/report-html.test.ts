import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeGroupsHtml } from './report-html.js';

describe('writeGroupsHtml', () => {
  it('shows an episode turn by turn: assistant text, tool call, tool result, per-turn reward, truncation', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-html-'));
    const messages = [
      { role: 'user', content: 'What is 6 * 7?' },
      {
        role: 'assistant',
        content: 'Let me compute.',
        reward: 0.1,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } }],
      },
      { role: 'tool', tool_call_id: 'c', name: 'calculator', content: '42' },
      { role: 'assistant', content: '\\boxed{42}' },
    ];
    const group = {
      scores: [1, -1],
      tokens: [[1, 2], [3]],
      messages: [messages, messages.slice(0, 2)],
      overrides: [{}, { set_advantage_to_zero: true }],
    };
    await writeFile(join(dir, 'g.jsonl'), `${JSON.stringify(group)}\n`);
    await writeGroupsHtml(join(dir, 'g.jsonl'), join(dir, 'g.html'), 'run');
    const html = await readFile(join(dir, 'g.html'), 'utf8');
    expect(html).toContain('sample 0 · score 1 · 2 turns · 1 tool calls · 2 tokens');
    expect(html).toContain('turn 0 · assistant · reward 0.1');
    expect(html).toContain('→ calculator({&quot;expression&quot;:&quot;6*7&quot;})');
    expect(html).toContain('turn 0 · tool · calculator</b><pre>42</pre>');
    expect(html).toContain('turn 1 · assistant</b><pre>\\boxed{42}</pre>');
    expect(html).toContain('sample 1 · score -1 · 1 turns · 1 tokens · truncated');
  });
});
