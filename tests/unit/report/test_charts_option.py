"""`--dra-charts never`: the run's verdict and reports without its SVG charts (and without
matplotlib's seconds of CPU); the default draws them."""

from __future__ import annotations

import json

pytest_plugins = ["pytester"]


def test_the_default_draws_the_charts_and_never_draws_none(fake_suite) -> None:
    fake_suite.write_tests()
    drawn = fake_suite.run(run_name="drawn")
    skipped = fake_suite.run("--dra-charts", "never", run_name="skipped")
    drawn_summary = json.loads((drawn.run_dir / "summary.json").read_text())
    skipped_summary = json.loads((skipped.run_dir / "summary.json").read_text())
    assert drawn_summary["artifacts"]["charts"], "the default run drew no chart"
    assert all((drawn.run_dir / chart).is_file() for chart in drawn_summary["artifacts"]["charts"])
    assert skipped_summary["artifacts"]["charts"] == []
    assert not list(skipped.run_dir.glob("charts/*.svg"))
    assert skipped_summary["verdict"] == drawn_summary["verdict"]
