import { Template } from '@huggingface/jinja';

/** Inputs of a chat template render, named as Hugging Face templates expect them. */
export interface ChatTemplateInput {
  messages: readonly Record<string, unknown>[];
  tools?: readonly unknown[];
  addGenerationPrompt: boolean;
  /** Extra template variables, e.g. `enable_thinking` (vLLM's `chat_template_kwargs`). */
  kwargs?: Record<string, unknown>;
}

/**
 * Renders the Jinja chat template stored in the GGUF (`tokenizer.chat_template`) the way
 * `transformers`' `apply_chat_template` does, so prompts match what the model was trained on.
 * The parsed template is cached per engine because parsing is the costly part.
 */
export class ChatTemplate {
  private readonly template: Template;

  constructor(
    source: string,
    private readonly specials: { bos_token?: string; eos_token?: string } = {},
  ) {
    this.template = new Template(source);
  }

  /** The prompt text; special tokens appear as text (`<|im_start|>`) and tokenize to their ids. */
  render(input: ChatTemplateInput): string {
    return this.template.render({
      ...input.kwargs,
      ...this.specials,
      messages: input.messages,
      ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
      add_generation_prompt: input.addGenerationPrompt,
    });
  }
}
