"""Exports decoders with a KV cache for the run-time-shapes tests and benchmark: transformers
models built from a Config (random weights, nothing downloaded), each step's cache fed back.

A model takes `input_ids` [batch, sequence], `attention_mask` [batch, total] (total = past +
sequence), for Llama `position_ids` [batch, sequence], and per layer `past_key_values.<i>.key`
and `.value` [batch, kv_heads, past, head_dim]; it gives `logits` [batch, sequence, vocab] and
`present.<i>.key` / `.value` [batch, kv_heads, total, head_dim]. The prompt is a step with
past = 0.

An encoder-decoder (T5) is two graphs: the encoder, `input_ids` and `attention_mask` [batch,
source] -> `last_hidden_state` [batch, source, d_model], run once per request; and the decoder
with its self-attention cache, `decoder_input_ids` [batch, sequence], `encoder_hidden_states`,
`encoder_attention_mask` and per layer `past_key_values.<i>.key` / `.value` [batch, heads, past,
d_kv] -> `logits` and `present.<i>.key` / `.value` [batch, heads, total, d_kv] (the
cross-attention's keys and values are computed from `encoder_hidden_states` at each step).
Written stripped of their weights (tests/zoo/weights.py: filled back from a seed) to
tests/decoders/models/<name>.onnx (T5: <name>_encoder.onnx and <name>_decoder.onnx) with
tests/decoders/manifest.json. t5_kv was exported with torch 2.14.1 (the manifest's `versions`).

Use the zoo's export environment (scripts/zoo/README.md; torch 2.13.0 CPU and transformers
5.24.0 are enough here):

    python scripts/zoo/export_decoders.py [--only NAME] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import onnx
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "zoo"))
import weights  # noqa: E402 - the zoo's stripping, next to its filling

OPSET = 17


def gpt2() -> tuple[Any, dict[str, Any]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=1000, n_embd=128, n_layer=2, n_head=4, n_positions=512, bos_token_id=0,
                        eos_token_id=0, attn_implementation="eager")
    return GPT2LMHeadModel(config), {"layers": 2, "kv_heads": 4, "head_dim": 32, "vocab": 1000, "positions": False,
                                     "source": f"transformers.GPT2LMHeadModel({config.to_json_string()!r})"}


def llama() -> tuple[Any, dict[str, Any]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                         attn_implementation="eager")
    return LlamaForCausalLM(config), {"layers": 4, "kv_heads": 2, "head_dim": 32, "vocab": 1000, "positions": True,
                                      "source": f"transformers.LlamaForCausalLM({config.to_json_string()!r})"}


def t5() -> tuple[Any, dict[str, Any]]:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                      attn_implementation="eager")
    return T5ForConditionalGeneration(config), {
        "layers": 2, "kv_heads": 4, "head_dim": 32, "vocab": 1000, "d_model": 128, "start_token": 0,
        "source": f"transformers.T5ForConditionalGeneration({config.to_json_string()!r})"}


MODELS = {"gpt2_kv": gpt2, "llama_kv": llama}
ENCODER_DECODERS = {"t5_kv": t5}


class WithCache(torch.nn.Module):
    """The model with its cache as flat tensors in and out (what an ONNX graph can take)."""

    def __init__(self, model: Any, layers: int, positions: bool) -> None:
        super().__init__()
        self.model = model
        self.layers = layers
        self.positions = positions

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *rest: torch.Tensor) -> Any:
        from transformers import DynamicCache

        position_ids = rest[0] if self.positions else None
        past = rest[1:] if self.positions else rest
        cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(self.layers)])
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
        present = []
        for layer in out.past_key_values.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


class T5Encoder(torch.nn.Module):
    def __init__(self, model: Any) -> None:
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class T5DecoderWithCache(torch.nn.Module):
    """T5's decoder with its self-attention cache as flat tensors in and out."""

    def __init__(self, model: Any, layers: int) -> None:
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, decoder_input_ids: torch.Tensor, encoder_hidden_states: torch.Tensor,
                encoder_attention_mask: torch.Tensor, *past: torch.Tensor) -> Any:
        from transformers import DynamicCache, EncoderDecoderCache

        cache = EncoderDecoderCache(DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(self.layers)]),
                                    DynamicCache())
        out = self.model(decoder_input_ids=decoder_input_ids, encoder_outputs=(encoder_hidden_states,),
                         attention_mask=encoder_attention_mask, cache=cache, use_cache=True)
        present = []
        for layer in out.past_key_values.self_attention_cache.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def _add_cache(inputs: list[torch.Tensor], names: list[str], outputs: list[str], axes: dict[str, dict[int, str]],
               layers: int, shape: tuple[int, int, int, int]) -> None:
    """Per layer, the cache's key and value as inputs (`past_key_values.<i>.*`, random, of
    `shape` [batch, heads, past, head_dim]) and as outputs (`present.<i>.*`), with their dynamic axes."""
    for i in range(layers):
        for part in ("key", "value"):
            inputs.append(torch.randn(*shape))
            names.append(f"past_key_values.{i}.{part}")
            axes[names[-1]] = {0: "batch", 2: "past"}
            outputs.append(f"present.{i}.{part}")
            axes[outputs[-1]] = {0: "batch", 2: "total"}


def _save_stripped(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], path: Path, names: list[str],
                   outputs: list[str], axes: dict[str, dict[int, str]]) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(module, inputs, str(path), input_names=names, output_names=outputs,
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    proto = onnx.load(str(path))
    stripped = weights.strip(proto)
    onnx.save(proto, str(path))
    return stripped


def _versions() -> dict[str, str]:
    return {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
            "onnx": onnx.__version__}


def export_encoder_decoder(name: str, out_dir: Path) -> dict[str, Any]:
    torch.manual_seed(zlib.crc32(name.encode()))
    model, info = ENCODER_DECODERS[name]()
    model.eval()
    layers, heads, dim = info["layers"], info["kv_heads"], info["head_dim"]
    batch, source, sequence, past = 2, 7, 1, 5
    ids = torch.randint(0, info["vocab"], (batch, source))
    mask = torch.ones(batch, source, dtype=torch.int64)
    encoder_file = f"models/{name}_encoder.onnx"
    encoder_strip = _save_stripped(T5Encoder(model).eval(), (ids, mask), out_dir / encoder_file,
                                   ["input_ids", "attention_mask"], ["last_hidden_state"],
                                   {"input_ids": {0: "batch", 1: "source"}, "attention_mask": {0: "batch", 1: "source"},
                                    "last_hidden_state": {0: "batch", 1: "source"}})
    hidden = torch.randn(batch, source, info["d_model"])
    inputs: list[torch.Tensor] = [torch.randint(0, info["vocab"], (batch, sequence)), hidden, mask]
    names = ["decoder_input_ids", "encoder_hidden_states", "encoder_attention_mask"]
    axes: dict[str, dict[int, str]] = {"decoder_input_ids": {0: "batch", 1: "sequence"},
                                       "encoder_hidden_states": {0: "batch", 1: "source"},
                                       "encoder_attention_mask": {0: "batch", 1: "source"},
                                       "logits": {0: "batch", 1: "sequence"}}
    outputs = ["logits"]
    _add_cache(inputs, names, outputs, axes, layers, (batch, heads, past, dim))
    decoder_file = f"models/{name}_decoder.onnx"
    decoder_strip = _save_stripped(T5DecoderWithCache(model, layers).eval(), tuple(inputs), out_dir / decoder_file,
                                   names, outputs, axes)
    return {"name": name, "kind": "encoder_decoder", "file": decoder_file, "encoder_file": encoder_file,
            "source": info["source"], "opset": OPSET, "layers": layers, "kv_heads": heads, "head_dim": dim,
            "vocab": info["vocab"], "d_model": info["d_model"], "start_token": info["start_token"],
            "position_ids": False, "inputs": names, "outputs": outputs,
            "strip": {"encoder": encoder_strip, "decoder": decoder_strip}, "versions": _versions()}


def export_one(name: str, out_dir: Path) -> dict[str, Any]:
    torch.manual_seed(zlib.crc32(name.encode()))
    model, info = MODELS[name]()
    model.eval()
    layers, kv, dim = info["layers"], info["kv_heads"], info["head_dim"]
    batch, sequence, past = 2, 3, 5
    inputs: list[torch.Tensor] = [torch.randint(0, info["vocab"], (batch, sequence)),
                                  torch.ones(batch, past + sequence, dtype=torch.int64)]
    names = ["input_ids", "attention_mask"]
    axes: dict[str, dict[int, str]] = {"input_ids": {0: "batch", 1: "sequence"},
                                       "attention_mask": {0: "batch", 1: "total"}}
    if info["positions"]:
        inputs.append(torch.arange(past, past + sequence).expand(batch, sequence).contiguous())
        names.append("position_ids")
        axes["position_ids"] = {0: "batch", 1: "sequence"}
    outputs = ["logits"]
    axes["logits"] = {0: "batch", 1: "sequence"}
    _add_cache(inputs, names, outputs, axes, layers, (batch, kv, past, dim))
    path = out_dir / "models" / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    wrapped = WithCache(model, layers, info["positions"])
    with torch.no_grad():
        torch.onnx.export(wrapped, tuple(inputs), str(path), input_names=names, output_names=outputs,
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    proto = onnx.load(str(path))
    stripped = weights.strip(proto)
    onnx.save(proto, str(path))
    return {"name": name, "file": f"models/{name}.onnx", "source": info["source"], "opset": OPSET,
            "layers": layers, "kv_heads": kv, "head_dim": dim, "vocab": info["vocab"],
            "position_ids": info["positions"], "inputs": names, "outputs": outputs, "strip": stripped,
            "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                         "onnx": onnx.__version__}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted({**MODELS, **ENCODER_DECODERS}))
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "decoders")
    args = parser.parse_args()
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": []}
    entries = {e["name"]: e for e in manifest["models"]}
    for name in args.only or sorted({**MODELS, **ENCODER_DECODERS}):
        entries[name] = export_encoder_decoder(name, args.out) if name in ENCODER_DECODERS \
            else export_one(name, args.out)
        print(f"{name}: {entries[name]['file']}")
    manifest["models"] = [entries[n] for n in sorted(entries)]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
