"""A tiny sentence encoder the tests build: a word-level ``tokenizer.json`` and an ONNX graph
(written with the ``onnx`` helper) whose token states are fixed rows of a table, masked.

Its vectors can be worked out by hand (`expected`): mean pooling averages the rows of the
tokens read, CLS pooling is the ``[CLS]`` row, so each embedding setting is seen to change
exactly the vectors it should."""

from __future__ import annotations

import math
from pathlib import Path

WORDS = ["query", ":", "passage", "search", "weather", "email", "send", "city", "song", "play"]
WORDS += [f"w{i}" for i in range(12)]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
VOCAB = {token: i for i, token in enumerate(SPECIAL + WORDS)}
DIMENSION = 8


def row(token_id: int, seed: int = 0) -> list[float]:
    """The table row (token state) of ``token_id``: fixed, distinct per token and seed."""
    return [math.sin(1.7 * token_id + 0.9 * d + 3.1 * seed) + 0.1 * d for d in range(DIMENSION)]


def write_tokenizer(path: Path) -> None:
    """A ``[CLS] ... [SEP]`` word-level tokenizer of `VOCAB` (punctuation split off)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    tokenizer.save(str(path))


def write_model(path: Path, seed: int = 0) -> None:
    """An encoder: ``last_hidden_state = table[input_ids] * attention_mask``."""
    import onnx
    from onnx import TensorProto, helper

    table = [x for i in range(len(VOCAB)) for x in row(i, seed)]
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["states"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "axes"], ["mask3"]),
        helper.make_node("Mul", ["states", "mask3"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "t"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", 8])],
        [
            helper.make_tensor("table", TensorProto.FLOAT, [len(VOCAB), DIMENSION], table),
            helper.make_tensor("axes", TensorProto.INT64, [1], [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def make_model(folder: Path, seed: int = 0) -> Path:
    """``folder`` holding ``model.onnx`` and ``tokenizer.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_model(folder / "model.onnx", seed)
    write_tokenizer(folder / "tokenizer.json")
    return folder


def tokens(text: str) -> list[int]:
    """The ids the tokenizer gives ``text`` (words and ``:``, no special tokens)."""
    return [VOCAB[t] for t in text.replace(":", " : ").split()]


def expected(ids: list[int], pooling: str = "mean", seed: int = 0) -> list[float]:
    """The unit vector of ``[CLS] ids [SEP]`` under ``pooling``."""
    read = [VOCAB["[CLS]"], *ids, VOCAB["[SEP]"]]
    if pooling == "cls":
        vector = row(read[0], seed)
    else:
        rows = [row(i, seed) for i in read]
        vector = [sum(r[d] for r in rows) / len(rows) for d in range(DIMENSION)]
    norm = math.hypot(*vector)
    return [x / norm for x in vector]
