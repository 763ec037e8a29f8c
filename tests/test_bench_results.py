"""bench/results.py: the one writer of bench/RESULTS.md appends sections, header once, never rewrites."""

from bench.results import HEADER, append_results


def test_append_results_writes_the_header_once_and_keeps_earlier_sections(tmp_path):
    path = tmp_path / "RESULTS.md"
    append_results("## first\n", path)
    append_results("## second\n", path)
    assert path.read_text(encoding="utf-8") == HEADER + "## first\n## second\n"


def test_append_results_never_rewrites_an_existing_file(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# kept by hand\n", encoding="utf-8")
    append_results("## new\n", path)
    assert path.read_text(encoding="utf-8") == "# kept by hand\n## new\n"
