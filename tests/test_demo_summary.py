"""The demo's summary (tools/demo.sh): each row's fields are read from what its stage's commands really print and
write. The demo's own stage functions run here on real commands (sourcing demo.sh runs nothing by itself): the
convert stage on the real MiniLM weights in `make test`, every stage, with a tiny model for the trainings, in
the extended tier. A field the commands no longer print is `?` in the table and an error at the end."""

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.subprocess

ROWS = {  # the fields of each row of the summary
    "1 text": r"(\d+) lines of text",
    "2 tokenize": r"(\d+) tokens; in-graph ids = Python ids on (\d+)/(\d+) lines",
    "3 convert": r"(\d+) tensors converted; reloaded: (\d+) mapped, (\d+) ignored, (\d+) missing",
    "4 features": r"(\d+) lines x (\d+) layers of features; closest lines (\d+), (\d+): cosine ([0-9.]+)",
    "5 serve": r"served (\d+) raw texts; paraphrase T1~T2 (-?[0-9.]+), unrelated T1~T3 (-?[0-9.]+)",
    "6 data": r"(\d+) training / (\d+) held-out instances",
    "7 pretrain": r"held-out masked LM accuracy ([0-9.]+) -> ([0-9.]+) \((\d+) steps\)",
    "8 finetune": r"dev accuracy ([0-9.]+) \((\d+) training snippets, 1 epoch\); new sentences: (\d+)/(\d+) right",
    "9 classify": r"(\d+) raw sentences, (\d+)/(\d+) labels as meant; classify scores = serve_text's",
}


def demo(out, script):
    """Runs `script` in bash after `source tools/demo.sh`, with the demo's variables for output folder `out`;
    returns (the bash process, {stage: row} of the rows it recorded, the fields it reported missing)."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(["bash", "-c", f"""
        set -euo pipefail
        source tools/demo.sh
        out={out} logs={out}/logs
        mkdir -p "$logs"
        export PYTHONPATH="$PWD" TF_CPP_MIN_LOG_LEVEL=2
        model=$(python3 tools/pypi_data.py minilm_dir)
        bert_dir="$out/minilm"
        demo_start=$(now)
        {script}
        end_stage
        for i in "${{!stage_names[@]}}"; do
          printf 'ROW\\t%s\\t%s\\n' "${{stage_names[$i]}}" "${{stage_results[$i]}}"
        done
        for line in "${{missing[@]}}"; do printf 'MISSING\\t%s\\n' "$line"; done
        """], capture_output=True, text=True, cwd=ROOT, env=env)
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    rows = {line[1]: line[2] for line in lines if line[0] == "ROW"}
    return done, rows, [line[1] for line in lines if line[0] == "MISSING"]


def test_the_convert_row_has_its_fields(tmp_path):
    """Stage 3 of the demo on the real MiniLM weights: the row has every field and they agree with the
    checkpoint written (its tensor count vanished when convert_checkpoint.py's log line changed)."""
    import tensorflow as tf

    done, rows, missing = demo(tmp_path, "demo_convert")
    assert done.returncode == 0 and not missing, (missing, done.stdout[-3000:], done.stderr[-3000:])
    fields = re.fullmatch(ROWS["3 convert"], rows["3 convert"])
    assert fields, rows
    tensors, mapped, ignored, missing_count = map(int, fields.groups())
    weights = [name for name, _ in tf.train.list_variables(str(tmp_path / "minilm" / "bert_model.ckpt"))
               if not name.startswith(("bert_tf/", "_CHECKPOINTABLE_OBJECT_GRAPH"))]
    assert tensors == mapped == len(weights) == 103 and ignored == 2 and missing_count == 0


def test_a_field_the_commands_no_longer_print_is_an_error(tmp_path):
    """Logs without the lines a row is read from: the row shows `?` and the summary ends with an error naming the
    stage, the field and the log."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "convert.log").write_text("I1205 03:09:01.1 1 convert.py:1] Converted a model\n")
    done, rows, missing = demo(tmp_path, 'stage 3 convert "" >/dev/null; summarize_convert; end_stage\n'
                                         "summary >/dev/null 2>&1 || echo SUMMARY_FAILED")
    assert rows == {"3 convert": "? tensors converted; reloaded: ?"}, done.stderr
    assert missing == [f"stage 3 (convert): the count of converted tensors (not in {logs}/convert.log)",
                       f"stage 3 (convert): the reload counts (not in {logs}/convert.log)"]
    assert "SUMMARY_FAILED" in done.stdout


@pytest.mark.slow
@pytest.mark.extended
def test_every_row_of_the_summary_has_its_fields(tmp_path, tiny_model_dir):
    """Every stage of the demo on real commands: stages 1-6 as the demo runs them, the two trainings (7, 8) and
    the classifier (9) with the tiny model and a few steps; then the demo's table, whose rows all have their
    fields, and the summary ends well."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    shutil.copy(tiny_model_dir["vocab_file"], tiny / "vocab.txt")
    shutil.copy(tiny_model_dir["bert_config_file"], tiny / "bert_config.json")
    for name in os.listdir(os.path.dirname(tiny_model_dir["init_checkpoint"])):
        if name.startswith("bert_model.ckpt"):
            shutil.copy(os.path.join(os.path.dirname(tiny_model_dir["init_checkpoint"]), name), tiny / name)
    out = tmp_path / "out"
    done, rows, missing = demo(out, f"""
        demo_text; demo_tokenize; demo_convert; demo_features; demo_serve; demo_data
        pretraining_flags=(--bert_config_file=tiny --num_train_steps=4 --num_warmup_steps=0
                           --save_checkpoints_steps=4 --steps_per_loop=2)
        bert_dir={tiny}
        demo_pretrain; demo_finetune; demo_classify
        end_stage
        summary > {tmp_path}/table.txt""")
    assert done.returncode == 0 and not missing, (missing, done.stdout[-3000:], done.stderr[-3000:])
    assert list(rows) == list(ROWS)
    for stage, row in rows.items():
        assert re.fullmatch(ROWS[stage], row), (stage, row)
    table = (tmp_path / "table.txt").read_text().splitlines()
    assert [line.split("  ")[0] for line in table[2:11]] == list(ROWS) and "?" not in "\n".join(table[2:11])
    assert (out / "summary.txt").read_text().splitlines() == table
