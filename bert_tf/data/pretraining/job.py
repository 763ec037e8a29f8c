"""Creates pretraining TFRecords from a corpus: streaming, in worker processes, into atomic output shards.

The original reads the whole corpus, shuffles all documents, builds `dupe_factor` rounds of instances in
memory, shuffles them all and writes them from one process. Here memory stays bounded:

1. Input files are read in a shuffled order (seeded); documents pass through a shuffle buffer holding
   `shuffle_buffer_bytes` of text (a random document leaves when it is full).
2. Documents leaving the buffer are grouped into tasks of at least `TASK_BYTES` of text and
   `TASK_MIN_DOCUMENTS` documents. A task is the original algorithm on those documents: `dupe_factor`
   rounds of instances whose random next segments come from the task's documents, masked, shuffled
   (`InstanceMaker.process_task`, with a generator seeded by the random seed and the task index).
3. Worker processes (pure Python and NumPy: no TensorFlow) run tasks, at most 2 per worker in flight,
   and write finished TFRecord file content (`record_framing`) to a spill file per task; the main process
   appends it in task order to the output files (a copy inside the kernel), each under a temporary name,
   every write checked, synced and renamed when all is written. Records
   are spread round-robin over the output files (as in the original).

So the output depends on the seed, the flags and the corpus, not on the number of workers. Statistics
per instance are the original's; what differs is the reach of shuffling: random next documents come from
a task (a random sample of the shuffle buffer, not the whole corpus), and instance order is shuffled
within a task, so copies of a document (dupe_factor) stay within one task's records.
"""

import collections
import errno
import glob
import multiprocessing
import os
import random
import signal
import sys

from absl import logging

from bert_tf import atomic_io
from bert_tf.data.pretraining.chinese_words import check_segmented
from bert_tf.data.pretraining.corpus import CorpusReader
from bert_tf.data.pretraining.instances import InstanceMaker, PretrainingStats
from bert_tf.data.record_framing import frame
from bert_tf.progress import Progress

TASK_BYTES = 1 << 20
TASK_MIN_DOCUMENTS = 16


def output_files_from_flag(output_file, num_output_shards=None):
    """`--output_file` -> list of output paths.

    Either a comma-separated list (the original's form; `num_output_shards`, if given, must equal its
    length) or a pattern with `{shard}` (and optionally `{num_shards}`), formatted for shard = 0 ..
    num_output_shards - 1: `out-{shard:05d}-of-{num_shards:05d}.tfrecord`.

    Raises:
      ValueError: a pattern without num_output_shards, a count mismatch, a bad pattern, duplicate paths or
        a directory that does not exist.
    """
    if "{" in output_file:
        if not num_output_shards or num_output_shards < 1:
            raise ValueError(f"output_file={output_file!r} is a pattern: num_output_shards must be >= 1")
        try:
            files = [output_file.format(shard=i, num_shards=num_output_shards) for i in range(num_output_shards)]
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"output_file={output_file!r}: a pattern may use {{shard}} and {{num_shards}} "
                             f"only ({e!r})") from None
    else:
        files = [f.strip() for f in output_file.split(",") if f.strip()]
        if num_output_shards is not None and num_output_shards != len(files):
            raise ValueError(f"num_output_shards={num_output_shards} but output_file lists {len(files)} "
                             "files; use a {shard} pattern or drop num_output_shards")
    if not files or len(set(files)) != len(files):
        raise ValueError(f"output_file={output_file!r} gives {len(files)} paths, {len(set(files))} distinct")
    for path in files:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ValueError(f"output directory {directory!r} (of {path!r}) does not exist")
    return files


def shuffle_documents(documents, buffer_bytes, rng):
    """Yields `documents` in a random order: a random document leaves a buffer once it holds more than
    `buffer_bytes` of text; the rest are shuffled at the end (0 keeps the order)."""
    buffer, size = [], 0
    for document in documents:
        buffer.append(document)
        size += document.num_bytes
        while size > buffer_bytes:
            i = rng.randrange(len(buffer))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            size -= buffer[-1].num_bytes
            yield buffer.pop()
    rng.shuffle(buffer)
    yield from buffer


def group_into_tasks(documents, min_bytes=TASK_BYTES, min_documents=TASK_MIN_DOCUMENTS):
    """Yields lists of consecutive documents, each with >= min_bytes and >= min_documents (a short last
    group joins the one before it)."""
    previous, task, size = None, [], 0
    for document in documents:
        task.append(document)
        size += document.num_bytes
        if size >= min_bytes and len(task) >= min_documents:
            if previous:
                yield previous
            previous, task, size = task, [], 0
    if previous and task:  # the last group is short
        previous, task = previous + task, []
    for group in (previous, task):
        if group:
            yield group


class ShardWriter:
    """Appends TFRecord file content to the output files, each under a temporary name
    (`atomic_io.temporary_path`) until `commit` syncs and renames them all; `abort` (or leaving a `with`
    block by an exception) deletes them. Every write is checked: a short write or a full disk raises an
    OSError naming the output file."""

    def __init__(self, output_files):
        self.output_files = list(output_files)
        self._temporaries = [atomic_io.temporary_path(path) for path in self.output_files]
        self._files = []
        for path in self.output_files:
            atomic_io.remove_leftovers(os.path.dirname(os.path.abspath(path)),
                                       os.path.basename(path) + atomic_io.TEMPORARY_MARK)
        for tmp, path in zip(self._temporaries, self.output_files):
            try:
                self._files.append(open(tmp, "wb", buffering=0))
            except OSError as e:
                self.abort()
                raise atomic_io.disk_error(e, path, "create") from None

    def write(self, contents):
        """contents: list of bytes, one per output file."""
        for file, content, path in zip(self._files, contents, self.output_files):
            atomic_io.write_all(file, content, path)

    def append_spill(self, path, sizes):
        """Appends the content of a spill file (the content for each output file, one after the other,
        `sizes` bytes each) and deletes it. The copy stays in the kernel (`os.copy_file_range`) where the
        file system allows."""
        with open(path, "rb", buffering=0) as spill:
            for file, size, output in zip(self._files, sizes, self.output_files):
                while size:
                    try:
                        copied = os.copy_file_range(spill.fileno(), file.fileno(), size)
                    except OSError as e:
                        if e.errno not in _NO_COPY_FILE_RANGE:
                            raise atomic_io.disk_error(e, output) from None
                        chunk = spill.read(min(size, 1 << 24))  # e.g. an old kernel: copy through memory
                        atomic_io.write_all(file, chunk, output)
                        copied = len(chunk)
                    if not copied:
                        raise OSError(f"{path}: {size} bytes missing")
                    size -= copied
        os.remove(path)

    def commit(self):
        for file in self._files:
            file.close()
        self._files = []
        atomic_io.publish(self._temporaries, self.output_files)

    def abort(self):
        for file in self._files:
            file.close()
        self._files = []
        for tmp in self._temporaries:
            if os.path.exists(tmp):
                os.remove(tmp)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.abort()


# copy_file_range errors that mean "not here" (another file system, an old kernel), not a failed write.
_NO_COPY_FILE_RANGE = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP)


class TaskRunner:
    """Runs one task and returns TFRecord file content for each output file (what a worker process does).

    Record i of task t goes to output file (t + i) % num_outputs, so records are spread evenly however
    many there are per task.
    """

    def __init__(self, maker, num_outputs):
        self.maker = maker
        self.num_outputs = num_outputs

    def __call__(self, task_index, documents):
        """documents: list of list of str -> (list of bytes per output file, `PretrainingStats`)."""
        records, stats = self.maker.process_task(task_index, documents)
        n = self.num_outputs
        contents = [frame(records[(n - task_index % n + shard) % n::n]) for shard in range(n)]
        return contents, stats


_WORKER_RUNNER = None
_WORKER_SPILL_PREFIX = None


def _init_worker(runner, spill_prefix):
    global _WORKER_RUNNER, _WORKER_SPILL_PREFIX
    _WORKER_RUNNER, _WORKER_SPILL_PREFIX = runner, spill_prefix
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not a forking parent's handler: terminate() ends us quietly


def _run_task(task_index, documents):
    """Runs a task in a worker; its output goes to a spill file (cheaper than sending it through a pipe).
    Returns (spill path, bytes per output file, `PretrainingStats`)."""
    contents, stats = _WORKER_RUNNER(task_index, documents)
    path = f"{_WORKER_SPILL_PREFIX}{task_index}"
    with open(path, "wb", buffering=0) as f:
        for content in contents:
            atomic_io.write_all(f, content, path)
    return path, [len(content) for content in contents], stats


def _spill_prefix(output_files):
    return atomic_io.temporary_path(output_files[0]) + ".task"


def _remove_spills(output_files):
    for path in glob.glob(glob.escape(_spill_prefix(output_files)) + "*"):
        os.remove(path)


def _task_results(runner, tasks, pool, num_workers, writer):
    """Runs the tasks and appends their output to `writer` in task order; yields each task and its
    `PretrainingStats`. At most 2 tasks per worker are in flight."""
    if pool is None:
        for index, task in enumerate(tasks):
            contents, stats = runner(index, [document.lines for document in task])
            writer.write(contents)
            yield task, stats
        return
    pending = collections.deque()

    def finish():
        task, result = pending.popleft()
        path, sizes, stats = result.get()
        writer.append_spill(path, sizes)
        return task, stats

    for index, task in enumerate(tasks):
        pending.append((task, pool.apply_async(_run_task, (index, [document.lines for document in task]))))
        if len(pending) >= 2 * num_workers:
            yield finish()
    while pending:
        yield finish()


def create_pretraining_data(input_files, output_files, tokenizer, options, num_workers=1,
                            shuffle_buffer_bytes=64 << 20, invalid_utf8="error"):
    """Reads `input_files` (one sentence per line, blank line between documents) and writes pretraining
    TFRecords (the original's 7 features, or 4 unmasked ones when `options.masking` is None).

    Args:
      input_files: list of paths (see `corpus.expand_input_patterns`).
      output_files: list of paths (see `output_files_from_flag`); records go round-robin.
      tokenizer: `FullTokenizer`.
      options: `InstanceOptions`.
      num_workers: 1 runs everything in this process; more forks that many worker processes.
      shuffle_buffer_bytes: size of the document shuffle buffer, in bytes of input text.
      invalid_utf8: "error" or "skip" (see `corpus.CorpusReader`).

    Shows the progress (`bert_tf.progress`) in MB of input text, with the documents and instances so far:
    `data creation  12.0/48.3 MB  24%  2.10 MB/s  ETA 0:00:17  1,204 documents, 9,876 instances`.

    Returns:
      (`PretrainingStats`, `CorpusReader` with bytes read and lines skipped).

    Raises:
      ValueError: bad input (invalid UTF-8 under "error", fewer than 2 documents, text that is not segmented
        for chinese_word_segmenter=spaces: `chinese_words.check_segmented`); nothing is left behind at the
        output paths when anything fails or the run is interrupted.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers={num_workers} must be >= 1")
    if options.chinese_word_segmenter == "spaces":
        check_segmented(input_files)
    rng = random.Random(options.random_seed)
    input_files = list(input_files)
    rng.shuffle(input_files)
    reader = CorpusReader(invalid_utf8)
    tasks = group_into_tasks(shuffle_documents(reader.documents(input_files), shuffle_buffer_bytes, rng))
    runner = TaskRunner(InstanceMaker(tokenizer, options), len(output_files))
    stats = PretrainingStats()
    total_bytes = sum(os.path.getsize(path) for path in input_files)
    logging.info("Reading %d files (%.1f MB) with %d worker(s); writing %d file(s)", len(input_files),
                 total_bytes / 1e6, num_workers, len(output_files))
    pool = None
    if num_workers > 1:
        # Forking is fast, but forking a process that has imported TensorFlow can hang the workers (locks
        # held by its threads); such a caller gets fresh ("spawn") worker processes instead.
        method = "spawn" if "tensorflow" in sys.modules else "fork"
        pool = multiprocessing.get_context(method).Pool(num_workers, _init_worker,
                                                        (runner, _spill_prefix(output_files)))
    try:
        with ShardWriter(output_files) as writer, Progress("data creation", total_bytes / 1e6, "MB") as progress:
            for task, task_stats in _task_results(runner, tasks, pool, num_workers, writer):
                stats += task_stats
                progress.advance(sum(document.num_bytes for document in task) / 1e6,
                                 f"{stats.documents:,} documents, {stats.instances:,} instances")
            if stats.documents < 2:
                raise ValueError(f"{', '.join(input_files)}: {stats.documents} document(s) with tokens; random "
                                 "next sentences need at least 2 (documents are separated by blank lines)")
            writer.commit()
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
            _remove_spills(output_files)
    return stats, reader


def summary_lines(stats, reader, seconds):
    """The end summary, as lines for the log."""
    rates = stats.rates()
    lines = [
        f"documents: {stats.documents:,} ({reader.bytes_read / 1e6:.1f} MB, {stats.corpus_tokens:,} tokens"
        + (f", {reader.skipped_lines:,} invalid UTF-8 lines skipped)" if reader.skipped_lines else ")"),
        f"instances: {stats.instances:,} ({rates['tokens_per_instance']:.1f} tokens each, "
        f"{rates['short_rate']:.1%} shorter than max_seq_length)",
        f"next sentence: {rates['random_next_rate']:.1%} random next",
    ]
    if stats.masked:
        lines.append(f"masked: {rates['masked_fraction']:.2%} of tokens ({rates['mask_token_rate']:.1%} [MASK], "
                     f"{rates['random_token_rate']:.1%} random, {rates['kept_rate']:.1%} kept)")
    lines.append(f"time: {seconds:.1f} s ({stats.instances / max(seconds, 1e-9):,.0f} instances/s, "
                 f"{reader.bytes_read / 1e6 / max(seconds, 1e-9):.2f} MB/s)")
    return lines
