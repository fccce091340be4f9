import { describe, expect, it } from 'vitest';
import { extractCode } from './extract.js';

const fence = (code: string, tag = 'python') => `\`\`\`${tag}\n${code}\`\`\``;
const add = 'def add(a, b):\n    return a + b\n';

describe('extractCode', () => {
  it('takes the fenced block that defines the entry point, the last such one', () => {
    const reply = `First a helper:\n${fence('def helper():\n    return 1\n')}\nThen:\n${fence('def add(a, b):\n    return 0\n')}\nFixed:\n${fence(add)}\nUsage:\n${fence('print(add(1, 2))\n')}`;
    expect(extractCode(reply, 'add')).toEqual({ code: add, fenced: true });
  });

  it('takes the last Python or untagged block when none defines the entry point', () => {
    expect(extractCode(`${fence('x = 1\n')}\n${fence('y = 2\n', '')}`, 'add')).toEqual({ code: 'y = 2\n', fenced: true });
    expect(extractCode(fence('    return a + b\n', 'py'), 'add')).toEqual({ code: '    return a + b\n', fenced: true });
  });

  it('never runs a block tagged as another language', () => {
    expect(extractCode(`${fence(add)}\n${fence('rm -rf /\n', 'bash')}`, 'add')).toEqual({ code: add, fenced: true });
    expect(extractCode(fence('rm -rf /\n', 'bash'), 'add')).toEqual({ code: '', fenced: false });
  });

  it('takes the whole reply when it has no fence', () => {
    expect(extractCode('    return a + b\n', 'add')).toEqual({ code: '    return a + b\n', fenced: false });
    expect(extractCode('  \n', 'add')).toEqual({ code: '', fenced: false });
  });

  it('reads a fence left open by a reply cut off at its token limit to the end', () => {
    expect(extractCode('Here:\n```python\ndef add(a, b):\n    return a +', 'add')).toEqual({
      code: 'def add(a, b):\n    return a +',
      fenced: true,
    });
  });

  it('accepts fences with spaces, Python 3 tags and indented fences, and async functions', () => {
    expect(extractCode('``` Python3 \nasync def add(a, b):\n    return a + b\n```', 'add')).toEqual({
      code: 'async def add(a, b):\n    return a + b\n',
      fenced: true,
    });
    const indented = '1. Code:\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n2. Done.';
    expect(extractCode(indented, 'add')).toEqual({ code: add, fenced: true });
  });

  it('reads only what follows a closed reasoning block; an open one yields no code', () => {
    expect(extractCode(`<think>maybe ${fence('def add(a, b):\n    return 0\n')}</think>\n${fence(add)}`, 'add')).toEqual({
      code: add,
      fenced: true,
    });
    expect(extractCode(`<think>${fence(add)}`, 'add')).toEqual({ code: '', fenced: false });
  });
});
