"""bench/bench_long_documents.py: its dry run end to end (a long-document set made by make_finetuning_data.py,
MiniLM converted, run_classifier.py in every mode: windows and each truncation; nothing appended to
bench/RESULTS.md). No timing or accuracy is asserted, only that each mode ran and was read back."""

import re

import pytest

from tests.helpers.bench_runs import dry_run


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.extended
def test_dry_run_trains_every_mode_and_counts_the_windows(tmp_path):
    out = dry_run("bench_long_documents.py", tmp_path, timeout=1200)
    assert "**sotu_party, max_seq_length 32**" in out, out
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.splitlines()
            if line.startswith(("| windows-", "| head", "| tail"))}
    assert set(rows) == {"windows-mean", "head", "tail", "head+tail"}, out
    for cells in rows.values():
        assert all(0 <= float(cell.split(" ")[0]) <= 100 for cell in cells[1:3]), cells  # macro F1, accuracy (%)
        assert float(cells[3]) > 0, cells  # train s / epoch
        assert re.fullmatch(r"[0-9a-f]{7,40} \|", cells[6]), cells  # the commit the case ran
    assert int(rows["windows-mean"][4]) == 2 * 140  # every speech over 2 windows: capped at 2
    assert rows["head"][4] == "-"
