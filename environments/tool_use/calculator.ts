/**
 * A safe arithmetic evaluator: a recursive-descent parser over + - * / % ^, parentheses, unary signs and decimals.
 * Never `eval`: the model writes the expression. Errors are {@link ToolError}s, which the model reads and can fix.
 */
import { ToolError } from 'clotho';

type Token = ({ kind: 'number'; value: number } | { kind: 'op'; value: string }) & { text: string; at: number };

// Thousands separators only in groups of three (12,400), so "1,2" is a syntax error rather than 12.
const NUMBER = /\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d*)?|\.\d+/y;
// What models write besides ASCII: ×, ÷, the Unicode minus and Python's **.
const ALIASES: Record<string, string> = { '×': '*', '÷': '/', '−': '-', '**': '^' };
const MAX_DEPTH = 100;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0].replaceAll(',', '')), text: number[0], at: i });
      i += number[0].length;
      continue;
    }
    const op = text.startsWith('**', i) ? '**' : c;
    const value = ALIASES[op] ?? op;
    if (!'+-*/%^()'.includes(value))
      throw new ToolError(`unexpected "${c}" at position ${i + 1}; use numbers, + - * / % ^ and parentheses`);
    tokens.push({ kind: 'op', value, text: op, at: i });
    i += op.length;
  }
  return tokens;
}

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): number {
    if (this.tokens.length === 0) throw new ToolError('empty expression');
    const value = this.sum();
    const rest = this.tokens[this.pos];
    if (rest) throw new ToolError(`unexpected "${rest.text}" at position ${rest.at + 1}`);
    return value;
  }

  private peek(...ops: string[]): string | undefined {
    const t = this.tokens[this.pos];
    return t?.kind === 'op' && ops.includes(t.value) ? t.value : undefined;
  }

  private sum(): number {
    let value = this.product();
    for (let op = this.peek('+', '-'); op; op = this.peek('+', '-')) {
      this.pos++;
      value = op === '+' ? value + this.product() : value - this.product();
    }
    return value;
  }

  private product(): number {
    let value = this.unary();
    for (let op = this.peek('*', '/', '%'); op; op = this.peek('*', '/', '%')) {
      this.pos++;
      const right = this.unary();
      if ((op === '/' || op === '%') && right === 0) throw new ToolError(op === '/' ? 'division by zero' : 'modulo by zero');
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  }

  // Unary minus binds looser than ^, as in mathematics: -2^2 is -4, and 2^-1 is 0.5.
  private unary(): number {
    const op = this.peek('+', '-');
    if (!op) return this.power();
    this.pos++;
    return this.nested(() => (op === '-' ? -this.unary() : this.unary()));
  }

  // Right-associative: 2^3^2 is 2^9.
  private power(): number {
    const base = this.primary();
    if (!this.peek('^')) return base;
    this.pos++;
    return base ** this.nested(() => this.unary());
  }

  private primary(): number {
    const t = this.tokens[this.pos];
    if (!t) throw new ToolError('unexpected end of expression');
    this.pos++;
    if (t.kind === 'number') return t.value;
    if (t.value !== '(') throw new ToolError(`unexpected "${t.text}" at position ${t.at + 1}`);
    const value = this.nested(() => this.sum());
    if (!this.peek(')')) throw new ToolError(`missing ")" for the "(" at position ${t.at + 1}`);
    this.pos++;
    return value;
  }

  // A bound on nesting, so that "((((…" cannot overflow the stack of the worker.
  private nested(parse: () => number): number {
    if (++this.depth > MAX_DEPTH) throw new ToolError(`expression nested deeper than ${MAX_DEPTH} levels`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }
}

/** Evaluates an arithmetic expression; throws {@link ToolError} on a syntax error, division by zero or overflow. */
export function evaluate(expression: string): number {
  const value = new Parser(tokenize(expression)).parse();
  if (!Number.isFinite(value)) throw new ToolError('the result is not a finite number');
  return value;
}

/** A result as the model reads it: 12 significant digits hide float noise (0.1 + 0.2 is 0.3). */
export function formatNumber(value: number): string {
  const rounded = Number(value.toPrecision(12));
  return Object.is(rounded, -0) ? '0' : String(rounded);
}
