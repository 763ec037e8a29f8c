"""bench/bench_input.py: its dry run end to end (records made by create_pretraining_data.py, Grain and tf.data
each in a process pinned to one CPU, static and dynamic masking; nothing appended to bench/RESULTS.md). No timing
is asserted."""

import pytest

from tests.helpers.bench_runs import dry_run


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_dry_run_reads_both_inputs_and_appends_nothing(tmp_path):
    out = dry_run("bench_input.py", tmp_path)
    for source in ("grain", "tf.data"):
        for masking in ("static", "dynamic"):
            rows = [line for line in out.splitlines() if line.startswith(f"| {source} | {masking} | ")]
            assert len(rows) == 1, out
            assert float(rows[0].split(" | ")[2].split(" ")[0].replace(",", "")) > 0, rows[0]
