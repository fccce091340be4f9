"""The weights written back as GGUF: the template's bytes when nothing changed, the new values where they did."""

from __future__ import annotations

import filecmp
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch

from clotho_client.training.model_io import GgufExporter, load_model


def test_export_rewrites_only_the_weights_in_the_template_layout(tiny_gguf: Path, tmp_path: Path) -> None:
    model = load_model(str(tiny_gguf), dtype=torch.float32, device=torch.device("cpu"))
    exporter = GgufExporter(str(tiny_gguf), model)
    assert exporter.arch == "qwen2"
    # Every parameter has exactly one tensor; the tied output (lm_head) is the embedding's, stored once.
    assert model.config.tie_word_embeddings
    assert len(exporter.mapping) == len(exporter.slots) == len(list(model.named_parameters()))

    same = tmp_path / "same.gguf"
    exporter.write(model, str(same))
    assert filecmp.cmp(tiny_gguf, same, shallow=False), "an unchanged model must give back the template's bytes"

    with torch.no_grad():
        model.model.embed_tokens.weight[7] += 0.5
        model.model.layers[1].self_attn.q_proj.bias.fill_(0.25)
    changed = tmp_path / "changed.gguf"
    exporter.write(model, str(changed))
    tensors = {t.name: np.array(t.data) for t in gguf.GGUFReader(str(changed)).tensors}
    original = {t.name: np.array(t.data) for t in gguf.GGUFReader(str(tiny_gguf)).tensors}
    assert np.allclose(tensors["token_embd.weight"][7], original["token_embd.weight"][7] + 0.5)
    assert np.array_equal(tensors["token_embd.weight"][8], original["token_embd.weight"][8])
    assert np.all(tensors["blk.1.attn_q.bias"] == 0.25)
    assert np.array_equal(tensors["blk.0.attn_q.bias"], original["blk.0.attn_q.bias"])
    # The file is replaced whole or not at all: no temporary file is left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["changed.gguf", "same.gguf"]


def test_a_model_that_does_not_fit_the_template_is_refused(tiny_gguf: Path) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    other = Qwen2ForCausalLM(Qwen2Config(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1))
    with pytest.raises(ValueError, match=r"the model's model.embed_tokens.weight is \(32, 16\), the file's token_embd.weight \(151669, 64\)"):
        GgufExporter(str(tiny_gguf), other)
    other = Qwen2ForCausalLM(Qwen2Config(vocab_size=151669, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2))
    with pytest.raises(ValueError, match="no GGUF tensor for the model's model.layers.2"):
        GgufExporter(str(tiny_gguf), other)
