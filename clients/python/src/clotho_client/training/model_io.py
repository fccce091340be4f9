"""Loading the policy (a Hugging Face folder or a GGUF file) and writing its weights back as GGUF for llama.cpp."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch

#: Architectures whose GGUF stores Q and K rotated for llama.cpp's RoPE (llama.cpp's converter permutes them).
_PERMUTED_QK = {"llama", "mistral"}


def load_model(source: str, *, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """A causal LM from a Hugging Face folder or repo id, or from a ``.gguf`` file (dequantised by transformers)."""
    from transformers import AutoModelForCausalLM

    path = Path(source)
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise FileNotFoundError(f"--model {source}: no such GGUF file")
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype)
        # Dequantised on load: plain tensors now, which transformers would otherwise refuse to save.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    else:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    return model.to(device)


@dataclass(frozen=True)
class _Slot:
    name: str
    offset: int
    n_bytes: int
    dtype: str
    shape: tuple[int, ...]


class GgufExporter:
    """Writes a model's weights into a copy of the GGUF it was loaded from, in place of the old ones.

    The header (architecture, tokenizer, chat template) and the tensor layout stay byte for byte those of the
    template, so llama.cpp sees the same model with new weights; only F32, F16 and BF16 tensors can be rewritten
    (a quantised template would need requantising, which llama.cpp's own tools do better).
    """

    def __init__(self, template: str, model: torch.nn.Module) -> None:
        import gguf

        reader = gguf.GGUFReader(template)
        self.template = template
        arch_field = reader.fields["general.architecture"]
        self.arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
        blocks = int(reader.fields[f"{self.arch}.block_count"].parts[-1][0])
        self.heads = int(reader.fields[f"{self.arch}.attention.head_count"].parts[-1][0])
        kv_field = reader.fields.get(f"{self.arch}.attention.head_count_kv")
        self.kv_heads = int(kv_field.parts[-1][0]) if kv_field is not None else self.heads
        self.slots: dict[str, _Slot] = {}
        for t in reader.tensors:
            kind = t.tensor_type.name
            if kind not in ("F32", "F16", "BF16"):
                raise ValueError(f"{template}: tensor {t.name} is {kind}; weights can be written back only into F32, F16 or BF16 GGUF files")
            self.slots[t.name] = _Slot(t.name, int(t.data_offset), int(t.n_bytes), kind, tuple(int(d) for d in t.data.shape))
        names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[self._arch_enum(gguf)], blocks)
        self.mapping: dict[str, str] = {}
        for hf_name, param in model.named_parameters():
            target = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            if target is None or target not in self.slots:
                if hf_name == "lm_head.weight" and getattr(model.config, "tie_word_embeddings", False):
                    continue  # tied to the embedding, which the file stores once
                raise ValueError(f"{template}: no GGUF tensor for the model's {hf_name}")
            if tuple(param.shape) != self.slots[target].shape:
                raise ValueError(f"{template}: the model's {hf_name} is {tuple(param.shape)}, the file's {target} {self.slots[target].shape}")
            self.mapping[hf_name] = target
        missing = set(self.slots) - set(self.mapping.values())
        if missing:
            raise ValueError(f"{template}: tensors the model does not have: {sorted(missing)[:5]}")

    def _arch_enum(self, gguf: object) -> str:
        for key, value in gguf.MODEL_ARCH_NAMES.items():  # type: ignore[attr-defined]
            if value == self.arch:
                return key.name
        raise ValueError(f"{self.template}: architecture {self.arch!r} is unknown to the gguf package")

    def write(self, model: torch.nn.Module, path: str) -> None:
        """Writes the model's weights as a GGUF file at ``path`` (through a temporary file and a rename)."""
        tmp = f"{path}.{os.getpid()}.tmp"
        shutil.copyfile(self.template, tmp)
        try:
            params = dict(model.named_parameters())
            with open(tmp, "r+b") as out:
                for hf_name, target in self.mapping.items():
                    slot = self.slots[target]
                    data = self._array(params[hf_name].detach(), target, slot)
                    if data.nbytes != slot.n_bytes:
                        raise ValueError(f"{hf_name}: {data.nbytes} bytes for the {slot.n_bytes} of {target}")
                    out.seek(slot.offset)
                    out.write(data.tobytes())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def _array(self, tensor: torch.Tensor, target: str, slot: _Slot) -> np.ndarray:
        t = tensor.float().cpu()
        if self.arch in _PERMUTED_QK and target.endswith(("attn_q.weight", "attn_k.weight")):
            t = _permute_qk(t, self.heads if "attn_q" in target else self.kv_heads)
        if slot.dtype == "F32":
            return t.numpy().astype(np.float32, copy=False)
        if slot.dtype == "F16":
            return t.numpy().astype(np.float16)
        return t.to(torch.bfloat16).view(torch.int16).numpy()


def _permute_qk(weight: torch.Tensor, heads: int) -> torch.Tensor:
    # llama.cpp's rotary layout: each head's two halves interleaved, as its converter writes them.
    out_dim = weight.shape[0]
    return weight.reshape(heads, 2, out_dim // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def gguf_source(model_arg: str, explicit: Optional[str]) -> Optional[str]:
    """The GGUF template to write weights into: ``--gguf-template``, else ``--model`` when it is a ``.gguf``."""
    if explicit:
        return explicit
    return model_arg if model_arg.lower().endswith(".gguf") else None
