"""A byte-level BPE tokenizer with a ChatML template, trained on a sentence: what BaseEnv loads by name, offline.

``python tiny_tokenizer.py <folder>`` writes it there (Clotho's TypeScript tests make theirs so).
"""

from __future__ import annotations

import sys


def save_tiny_tokenizer(folder: str) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(["What is 12 + 30? Adding them gives \\boxed{42}"], trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    fast.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    save_tiny_tokenizer(sys.argv[1])
