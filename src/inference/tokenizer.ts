import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { QWEN_VL_IMAGE_PLACEHOLDER, renderChatTemplate, type ChatMessage, type ChatTemplateOptions } from './chat-template.js';
import {
  readTokenizerFiles,
  TokenizerSourceError,
  type TokenizerConfig,
  type TokenizerFiles,
  type TokenizerSourceOptions,
} from './tokenizer-sources.js';

/** A special token and its id. */
export interface SpecialToken {
  token: string;
  id: number;
}

/** A token added on top of the model's vocabulary (`added_tokens` in tokenizer.json). */
export interface AddedToken extends SpecialToken {
  /** Special tokens are dropped by `decode({ skipSpecialTokens: true })`. */
  special: boolean;
}

/** Options of `Tokenizer.encode`. */
export interface EncodeOptions {
  /** Add the tokens the post-processor adds (e.g. BOS for Llama; none for Qwen). @default true */
  addSpecialTokens?: boolean;
}

/** Options of `Tokenizer.decode`. */
export interface DecodeOptions {
  /** Leave out special tokens (`<|im_end|>`, ...), keeping added non-special ones (`<tool_call>`). @default false */
  skipSpecialTokens?: boolean;
}

/** A Hugging Face tokenizer with its special tokens and chat template. */
export interface Tokenizer {
  /** The source it was loaded from. */
  readonly name: string;
  /** Ids in use, added tokens included (transformers' `len(tokenizer)`); the model's embedding may be larger. */
  readonly vocabSize: number;
  readonly bos: SpecialToken | undefined;
  readonly eos: SpecialToken | undefined;
  readonly pad: SpecialToken | undefined;
  readonly addedTokens: readonly AddedToken[];
  /** The default chat template, when the tokenizer has one. */
  readonly chatTemplate: string | undefined;
  encode(text: string, options?: EncodeOptions): number[];
  decode(ids: readonly number[], options?: DecodeOptions): string;
  tokenToId(token: string): number | undefined;
  idToToken(id: number): string | undefined;
  /**
   * The prompt text, as transformers' `apply_chat_template(tokenize=False)` renders it. Image parts become the image
   * placeholder of the model family whose image tokens the vocabulary holds (Qwen-VL's, `<image>`, Gemma 3's), as
   * vLLM renders them, unless `imagePlaceholder` is given.
   */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string;
  /** The prompt's ids: the rendered text encoded without adding special tokens, as transformers does. */
  encodeChat(messages: readonly ChatMessage[], options?: ChatTemplateOptions): number[];
}

/**
 * Loads a tokenizer from an alias (`qwen3`), `npm:<package>`, a local directory (or a file in it) with
 * `tokenizer.json` and `tokenizer_config.json`, or a Hugging Face repo id, downloaded once into
 * `<CLOTHO_HOME>/hf/<repo>`.
 */
export async function loadTokenizer(source: string, options?: TokenizerSourceOptions): Promise<Tokenizer> {
  return createTokenizer(await readTokenizerFiles(source, options));
}

/** Builds a tokenizer from files already read. */
export function createTokenizer(files: TokenizerFiles): Tokenizer {
  return new LoadedTokenizer(files);
}

class LoadedTokenizer implements Tokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly bos: SpecialToken | undefined;
  readonly eos: SpecialToken | undefined;
  readonly pad: SpecialToken | undefined;
  readonly addedTokens: readonly AddedToken[];
  readonly chatTemplate: string | undefined;
  readonly #hf: HfTokenizer;
  readonly #templates: ReadonlyMap<string, string>;
  readonly #templateVariables: Record<string, unknown>;
  readonly #imagePlaceholder: string | undefined;

  constructor(files: TokenizerFiles) {
    this.name = files.name;
    this.#hf = new HfTokenizer(files.tokenizerJson, files.config);
    let maxId = -1;
    for (const id of this.#hf.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    this.addedTokens = [...this.#hf.get_added_tokens_decoder().values()]
      .map((t) => ({ token: t.content, id: t.id, special: t.special }))
      .sort((a, b) => a.id - b.id);
    this.bos = this.#special(files.config.bos_token);
    this.eos = this.#special(files.config.eos_token);
    this.pad = this.#special(files.config.pad_token);
    this.#templates = chatTemplates(files);
    this.chatTemplate = this.#templates.get('default');
    this.#templateVariables = templateVariables(files.config);
    this.#imagePlaceholder = IMAGE_PLACEHOLDERS.find((text) => imageTokens(text).every((t) => this.#hf.token_to_id(t) !== undefined));
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.#hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    // The library rejects an empty list; an empty completion is ordinary in RL rollouts.
    if (ids.length === 0) return '';
    return this.#hf.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  tokenToId(token: string): number | undefined {
    return this.#hf.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.#hf.id_to_token(id);
  }

  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    // Like transformers: a `tool_use` template, when there is one, renders conversations with tools.
    const template = (options.tools?.length ? this.#templates.get('tool_use') : undefined) ?? this.#templates.get('default');
    if (template === undefined) throw new TokenizerSourceError(`${this.name} has no chat template`);
    const placeholder = options.imagePlaceholder ?? this.#imagePlaceholder;
    return renderChatTemplate(
      template,
      messages,
      placeholder === undefined ? options : { ...options, imagePlaceholder: placeholder },
      this.#templateVariables,
    );
  }

  encodeChat(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): number[] {
    return this.encode(this.applyChatTemplate(messages, options), { addSpecialTokens: false });
  }

  #special(spec: TokenizerConfig['bos_token']): SpecialToken | undefined {
    const token = tokenText(spec);
    if (token === undefined) return undefined;
    const id = this.#hf.token_to_id(token);
    return id === undefined ? undefined : { token, id };
  }
}

/**
 * Image placeholders of vision-language model families, in vLLM's spelling, each recognised by its tokens being in
 * the vocabulary: Qwen2/2.5/3-VL (every Qwen2/3 tokenizer has its tokens), LLaVA and InternVL, Gemma 3.
 */
const IMAGE_PLACEHOLDERS = [QWEN_VL_IMAGE_PLACEHOLDER, '<image>', '<start_of_image>'];

const imageTokens = (placeholder: string) => placeholder.match(/<[^<>]+>/g) ?? [];

function tokenText(spec: TokenizerConfig['bos_token'] | { content: string }): string | undefined {
  if (spec === null || spec === undefined) return undefined;
  return typeof spec === 'string' ? spec : spec.content;
}

/** Named templates: a `chat_template.jinja` file wins over the config, as in transformers. */
function chatTemplates(files: TokenizerFiles): Map<string, string> {
  const templates = new Map<string, string>();
  const configured = files.config.chat_template;
  if (typeof configured === 'string') templates.set('default', configured);
  else if (Array.isArray(configured)) for (const { name, template } of configured) templates.set(name, template);
  if (files.chatTemplateFile !== undefined) templates.set('default', files.chatTemplateFile);
  return templates;
}

/** The special-token strings transformers hands every template (its `special_tokens_map`). */
function templateVariables(config: TokenizerConfig): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const) {
    const text = tokenText(config[key]);
    if (text !== undefined) variables[key] = text;
  }
  if (config.additional_special_tokens) {
    variables.additional_special_tokens = config.additional_special_tokens.map(tokenText);
  }
  return variables;
}
