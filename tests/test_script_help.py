"""Every script's `--help` lists the flags it reads, also those defined in the shared flag modules
(model_flags.py, training_flags.py, finetuning_flags.py), not only `--helpfull`."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_FILES = ["bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case"]
TRAINING = ["save_checkpoints_steps", "iterations_per_loop", "use_tpu", "distribution_strategy", "mixed_precision",
            "use_xla", "optimizer", "num_accumulation_steps", "seed"]
FINETUNING = MODEL_FILES + TRAINING + ["data_dir", "output_dir", "max_seq_length", "do_train", "do_predict",
                                       "train_batch_size", "predict_batch_size", "learning_rate", "num_train_epochs",
                                       "warmup_proportion", "best_metric", "early_stopping_patience"]
SCRIPTS = {
    "run_classifier.py": FINETUNING + ["do_eval", "eval_batch_size", "task_name", "tfds_name", "label_list"],
    "run_ner.py": FINETUNING + ["do_eval", "eval_batch_size", "train_file", "dev_file", "test_file"],
    "run_swag.py": FINETUNING + ["do_eval", "eval_batch_size"],
    "run_squad.py": FINETUNING + ["train_file", "predict_file", "doc_stride", "max_query_length",
                                  "version_2_with_negative", "cache_dir", "tfds_name"],
    "run_pretraining.py": MODEL_FILES[:3] + TRAINING + ["input_file", "output_dir", "num_train_steps",
                                                        "max_predictions_per_seq", "dynamic_masking"],
    "export_model.py": MODEL_FILES + ["model_type", "export_format", "export_dir", "max_seq_length", "label_list"],
    "extract_features.py": MODEL_FILES + ["input_file", "output_file", "layers", "max_seq_length", "batch_size"],
    "create_pretraining_data.py": ["vocab_file", "do_lower_case", "input_file", "output_file", "max_seq_length",
                                   "masked_lm_prob", "dupe_factor", "random_seed", "do_whole_word_mask"],
    "build_vocab.py": ["do_lower_case", "input_file"],
    "convert_checkpoint.py": ["init_checkpoint", "bert_config_file", "vocab_file", "output_dir"],
}


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_lists_every_flag_the_script_reads(script):
    done = subprocess.run([sys.executable, os.path.join(ROOT, script), "--help"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=120)
    assert done.returncode == 1 and "Try --helpfull" in done.stdout, done.stderr[-2000:]  # absl exits 1 on --help
    listed = set(re.findall(r"^  --(?:\[no\])?(\w+)", done.stdout, re.M))
    missing = [name for name in SCRIPTS[script] if name not in listed]
    assert not missing, f"{script} --help lacks {missing}"
    assert "--tf_" not in done.stdout and len(listed) < 80  # TensorFlow's own flags stay in --helpfull
    if script == "run_squad.py":  # the original run_squad.py's default, not the classifier's 128
        assert re.search(r"--max_seq_length: .*\n(?:\s+.*\n)*?\s+\(default: '384'\)", done.stdout)
