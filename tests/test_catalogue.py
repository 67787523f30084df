"""Tests for replay_cli.catalogue: every metric a report writes has one entry, no other module
spells a metric name and the catalogue spells each once, the docs' table is the catalogue's, and
every human surface writes a quantity in one unit."""

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli.catalogue import columns
from replay_cli.parameters import registry

from factories import config, replay_frame, rollouts

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "replay_cli"
SPELLER = PACKAGE / "catalogue"
"""The one package that spells metric names: the engine that computes them names them through its
constants and helpers too."""
NAMESPACES = {"validation/", "train/"}
"""Tag prefixes that are namespaces of a logger, not metric names."""
COLUMNS = {v for k, v in vars(columns).items() if k.isupper() and isinstance(v, str)}
"""The columns beside the metrics the catalogue names (the recommendation table's, the digest)."""
VOCABULARY = {
    *C.TABLE_NAMES,
    *COLUMNS,
    C.LONG,
    C.FORECAST_REFUSED,
    *C.FIT_TEXT,
}
"""Names of columns and values beside the metrics that the catalogue writes too: the long
forecast table's `metric` values, the recommendation table's columns, the `@long` scope."""
PENDING = {
    "engine/first_step.py": "resolve*3 solve_minutes*2 fail_minutes*2",
    "engine/pushes.py": "resolve",
    "engine/tables.py": "resolve",
    "maths/bootstrap.py": "resolve solve_minutes fail_minutes",
}
"""Words of `VOCABULARY` spelled outside the catalogue, by module (`word*count`): the engine's and
the maths' own keys (the first-step diagnostic's and the bootstrap's per-quantity dicts, the
pushes' names), which coincide with the long table's words but name no table value; maths/ sits
below the catalogue and cannot read it. Any other spelling fails the check."""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("cat") / "r"
    configs = [
        config({"enabled": False}),
        config({"apply_to": "correct"}, {"clip_low": -3.0, "clip_high": 3.0}),
        config({"semantics": "internal"}),
    ]
    api.replay_to_report(["data_samples/rollouts_medium.parquet"], configs, out)
    return out


def test_every_metric_column_of_a_report_has_an_entry(report):
    known = {*registry(), "config_id", "label", C.TRAINED_DIGEST, *C.FIT_TEXT}
    summary = pl.read_parquet(report / "summary.parquet")
    missing = [c for c in summary.columns if c not in known and c not in C.CATALOGUE]
    assert missing == []
    steps = pl.read_parquet(report / "steps.parquet")
    known |= {"step", "rows", "groups"}
    assert [c for c in steps.columns if c not in known and c not in C.CATALOGUE] == []


def test_the_summary_describes_its_metric_columns(report):
    schema = pq.read_schema(report / "summary.parquet")
    field = schema.field(C.F_RESOLVE_VS_OFF)
    assert field.metadata[b"unit"] == b"ratio"
    assert field.metadata[b"description"].startswith(b"resolve rate after T training steps")
    assert schema.field("input/run_time_p50").metadata[b"unit"] == b"seconds"
    assert schema.field("lambda_time").metadata is None  # a parameter, not a metric


def _starts_a_name(text: object) -> bool:
    """A piece of text that names a metric once something is added to it (`push/`,
    `time_efficiency/`), not a logger's namespace."""
    return (
        isinstance(text, str)
        and "/" in text
        and text not in NAMESPACES
        and any(k.startswith(text) and k != text for k in C.CATALOGUE)
    )


def _names(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each metric name a module writes: a string constant that is a catalogue
    name (`'step/resolve'`), or the start of one, an f-string's head (`f'push/...'`) or a
    prefix another name is joined to (`'push/...'`)."""
    found = []
    tree = ast.parse(path.read_text())
    pieces = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and _starts_a_name(head.value):
                found.append((node.lineno, f"f'{head.value}...'"))
        elif isinstance(node, ast.Constant) and id(node) not in pieces:
            if node.value in C.CATALOGUE or node.value in VOCABULARY:
                found.append((node.lineno, repr(node.value)))
            elif _starts_a_name(node.value):
                found.append((node.lineno, f"'{node.value}...'"))
    return found


def _spelled(path: Path) -> list[str]:
    """Metric names a module spells (`_names`), where each is."""
    return [f"{path.name}:{line} {what}" for line, what in _names(path)]


def _spelled_twice(paths: list[Path]) -> list[str]:
    """Metric names, and the heads of the f-strings that build a family of them, the modules
    write more than once between them."""
    counts = Counter(what for path in paths for _, what in _names(path))
    return sorted(what for what, n in counts.items() if n > 1)


def _outside() -> dict[str, Counter[str]]:
    """Per module outside the catalogue, what of `VOCABULARY` and the metric names it spells."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if SPELLER not in path.parents and (found := Counter(w for _, w in _names(path))):
            out[path.relative_to(PACKAGE).as_posix()] = found
    return out


def test_no_module_but_the_catalogue_spells_a_metric_name():
    """The engine that computes the metrics, the report and the advice all name them (and the
    columns beside them) through the catalogue's constants and helpers."""
    pending = {}
    for path, words in PENDING.items():
        pairs = (w.partition("*")[::2] for w in words.split())
        pending[path] = Counter({repr(w): int(n or 1) for w, n in pairs})
    assert _outside() == pending


def test_the_check_catches_a_planted_name(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        'x = row["step/resolve_vs_off"]\ny = f"push/resolve{scope}"\nTE = "time_efficiency/"\n'
        'z = table.filter(pl.col("metric") == "solve_minutes_vs_off")\nw = row["role"]\n'
    )
    assert len(_spelled(planted)) == 5


def test_the_catalogue_writes_each_metric_name_once():
    """One spelling per metric: the entries, the engine and the readers share one constant; its
    modules between them write each name once."""
    modules = sorted(SPELLER.glob("*.py"))
    assert _spelled_twice(modules) == []
    names = [what for path in modules for _, what in _names(path)]
    assert len(names) > 90  # it does write the names: the check reads them
    spelled = (*C.TABLE_METRICS, *COLUMNS, C.LONG)
    assert {repr(w) for w in spelled} <= set(names)  # the rest are derived: off(), vs_off()


def test_the_check_catches_a_name_planted_twice_in_the_catalogue(tmp_path):
    planted = tmp_path / "stray.py"
    planted.write_text(
        'STRAY = "forecast/resolve_vs_off"\nBANDS = {q: f"adv/{q}" for q in ("p50",)}\n'
        'COLUMN = "won_share"\n'
    )
    modules = [*sorted(SPELLER.glob("*.py")), planted]
    assert _spelled_twice(modules) == ["'forecast/resolve_vs_off'", "'won_share'", "f'adv/...'"]


def test_an_interval_end_or_a_twin_goes_before_the_scope():
    assert C.bound(C.F_RESOLVE_VS_OFF_LONG, "low") == C.F_RESOLVE_VS_OFF_LOW_LONG
    assert C.bound(C.F_RESOLVE_VS_OFF, "low", "@long") == C.F_RESOLVE_VS_OFF_LOW_LONG
    assert C.off(C.scoped(C.RESOLVE_PUSH, "@long")) == "push/resolve_off@long"
    assert C.off(C.RESOLVE_PUSH, "@long") == "push/resolve_off@long"
    assert (
        C.at_check(C.F_RESOLVE_VS_OFF_LOW_LONG, "half") == "forecast/resolve_vs_off_low_half@long"
    )


def test_the_catalogue_loads_without_numpy():
    """The CLI reads the catalogue where it prints; the spec's numbers it shares with the maths
    (maths/spec.py) must not bring numpy or polars with them."""
    code = (
        "import sys\n"
        "import replay_cli.catalogue\n"
        "print(sorted(m for m in ('numpy', 'polars', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_docs_metric_table_is_the_catalogues():
    report_md = (ROOT / "docs" / "report.md").read_text()
    assert C.markdown_table() in report_md, (
        "docs/report.md's metric table is stale: paste replay_cli.catalogue.markdown_table()"
    )


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        (C.F_RESOLVE_VS_OFF, 1.0441, "104.4%"),
        (C.F_RESOLVE_VS_OFF_LONG, -0.115, "−11.5%"),
        (C.TIME_ONLY_SHARE, 0.0, "0"),
        ("input/run_time_p50", 540.0, "9 min"),
        (C.SOLVE_VS_OFF, -0.34, "−0.34 min"),
        (C.SOLVE_VS_OFF, 1.36e-17, "0"),
        (C.RESOLVE, 0.0123, "+1.2 pts"),
        (C.SOLVE_PUSH, 1.36e-17, "0"),
        (C.ABS_MAX, None, "-"),
    ],
)
def test_one_unit_per_quantity(name, value, shown):
    assert C.show(name, value) == shown


def test_machine_tables_keep_fractions_and_people_get_percent():
    m = C.metric(C.F_RESOLVE_VS_OFF)
    assert m.human(1.044) == pytest.approx(104.4)
    assert C.metric(C.SOLVE_VS_OFF).human(1.36e-17) == 0.0
    assert C.metric("input/run_time_p50").human(120.0) == 2.0  # seconds -> minutes


# ---- units and labels pinned (issue 44: mutation survivors) ------------------------------


@pytest.mark.parametrize("value", [None, float("nan")])
def test_no_value_is_none_in_human_units_not_an_error(value):
    # TensorBoard and W&B write human units: a null headline (`@long` without long problems)
    # must be left out, not crash the export.
    assert C.metric(C.F_RESOLVE_VS_OFF_LONG).human(value) is None
    assert C.metric("input/run_time_p50").human(value) is None


@pytest.mark.parametrize("unit", ["count", "calls", "number"])
def test_whole_counts_keep_every_digit_and_a_thousands_separator(unit):
    assert C.show_value(unit, 1234) == "1,234"
    assert C.show_value(unit, 0) == "0"
    assert C.show_value(unit, True) == "yes"


def test_a_whole_number_of_another_unit_is_shown_in_that_unit():
    assert C.show_value("share", 1) == "100.0%"
    assert C.show_value("minutes", 2) == "2 min"
    assert C.show_value("seconds", 1234) == "20.57 min"


def test_a_scoped_metric_is_its_base_label_and_scope():
    base = C.metric("step/resolve_vs_off")
    assert base.label
    for scope in ("short", "medium", "long"):
        scoped = C.metric(f"step/resolve_vs_off@{scope}")
        assert scoped.label == f"{base.label}, {scope}"
        assert scoped.description == f"{base.description} on {scope} problems"
        if base.short:
            assert scoped.short == f"{base.short} {scope}"


def test_a_null_headline_is_left_out_of_tensorboard_and_wandb_runs(tmp_path):
    """Groups of one length have no long problems: every `@long` headline is null, and both
    exports write the others."""
    pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("tensorboard", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    from replay_cli.io.tensorboard import read_scalars
    from replay_cli.io.wandb_run import read_log, runs_of
    from replay_cli.report import tensorboard, wandb_runs
    from replay_cli.report.run_tags import run_name

    frame = rollouts(
        group_id=[0, 0, 0, 0, 1, 1, 1, 1],
        reward=[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0],
        openhands_run_time=[600.0, 900.0, 1200.0, 300.0] * 2,
    )
    result = replay_frame(frame, {"lambda_time": 1 / 60})
    row = result.result.summary.row(0, named=True)
    assert row[C.F_RESOLVE_VS_OFF_LONG] is None
    assert row[C.F_RESOLVE_VS_OFF] is not None
    tensorboard.write_runs(result, tmp_path / "tb")
    tags = set(read_scalars(tmp_path / "tb", run_name(row["label"]))["metric"])
    pct, pct_long = C.human_name(C.F_RESOLVE_VS_OFF), C.human_name(C.F_RESOLVE_VS_OFF_LONG)
    assert tensorboard.hparam_tag(pct) in tags
    assert tensorboard.hparam_tag(pct_long) not in tags
    wandb_runs.write_runs(result, tmp_path / "wb", group="g")
    (log,) = runs_of(tmp_path / "wb").values()
    logged = read_log(log).summary
    assert logged[pct] == pytest.approx(row[C.F_RESOLVE_VS_OFF] * 100)
    assert pct_long not in logged


@pytest.mark.parametrize(
    ("name", "human"),
    [
        ("adv/explosion_frac", "adv/explosion_pct"),
        ("signal/group_rate", "signal/group_rate_pct"),
        ("forecast/resolve_vs_off_low@long", "forecast/resolve_vs_off_low_pct@long"),
        ("forecast/solve_minutes_vs_off", "forecast/solve_minutes_vs_off"),  # minutes either way
        ("push/minutes_pass", "push/minutes_pass"),
        ("input/run_time_p50", "input/run_time_p50_min"),
    ],
)
def test_a_value_in_human_units_has_a_name_that_says_so(name, human):
    """A % is never stored under a `_frac` or `_rate` name beside the trainer's fractions."""
    assert C.human_name(name) == human


def test_a_change_is_written_in_the_unit_of_its_metric():
    assert C.show_change("share", 0.0437) == "+4.37 pts"
    assert C.show_change("ratio", -0.0437) == "−4.37 pts"
    assert C.show_change("minutes_change", -1.206) == "−1.21 min"
    assert C.show_change("seconds", 120.0) == "+2 min"
    assert C.show_change("reward", -0.0745) == "−0.0745"
    assert C.show_change("minutes_change", 1e-12) == "0"
    assert C.show_change("share", None) == "-"


def test_every_negative_number_is_written_with_the_minus_sign():
    assert C.show_value("advantage", -2.268) == "−2.268"
    assert C.show_value("minutes_change", -0.08) == "−0.08 min"
    assert C.show_value("share", -0.05) == "−5.0%"
    assert C.show_value("reward", None) == "-"  # a missing value keeps its dash
    assert C.show_value("number", 9.73e-18) == "0"
    assert C.show_value("seconds", 504.1) == "8.402 min"


def test_a_cells_mark_reads_the_rules_bars_handed_in():
    """The catalogue marks cells by the thresholds its caller hands in (Rule.bars()), not by a
    rule it reads behind the import graph's back: a stricter rule marks what the default keeps."""
    from replay_cli.advice.rule import Rule

    row = {C.F_RESOLVE_VS_OFF: 0.97, C.F_FAIL_VS_OFF: -0.5, C.F_FAIL_OFF: 4.0}
    default, strict = Rule().bars(), Rule(min_resolve_vs_off=0.98, max_fail_faster=0.1).bars()
    assert C.hazard(C.F_RESOLVE_VS_OFF, 0.97, row, default) == ("", "")
    assert C.hazard(C.F_RESOLVE_VS_OFF, 0.97, row, strict) == (
        "warn",
        "below 98% of shaping off after T steps",
    )
    # Failures 0.5 min sooner: within 25% of 4 min, beyond 10% of it (0.4 min).
    assert Rule(max_fail_faster=0.25).bars().fail_limit(row) == pytest.approx(1.0)
    assert C.hazard(C.F_FAIL_VS_OFF, -0.5, row, Rule(max_fail_faster=0.25).bars()) == ("", "")
    assert C.hazard(C.F_FAIL_VS_OFF, -0.5, row, strict) == (
        "warn",
        "failures end more than 0.4 min sooner than under shaping off",
    )


def test_a_number_reads_one_way_in_sentences_and_tables():
    """units serves every surface: a threshold with the digits it needs, a measured share to one
    decimal, a change of a probability in signed points, a table cell to 4 digits."""
    assert [C.pct(x) for x in (0.95, 0.043, 0.0005, 0.0)] == ["95%", "4.3%", "0.05%", "0%"]
    assert C.percent(0.4781) == "47.8%"
    assert [C.points(x) for x in (0.105, -0.008)] == ["+10.5", "−0.8"]
    assert [C.fmt(x) for x in (0.0, 1234, 2.5e-4, 3.14159, None)] == [
        "0",
        "1,234",
        "0.00025",
        "3.142",
        "-",
    ]
    assert C.minutes_text(-0.344) == "−0.34 min"
    assert C.minutes_text(0.344, signed=False) == "0.34 min"
    assert C.minutes_text(1e-12) == "0 min"


def test_the_rules_bar_reads_on_the_page_as_in_the_rules_sentence(report):
    """The frontier's line and its caption write the bar as the rule's sentence does (95%), not
    as a measured ratio (95.0%)."""
    page = (report / "index.html").read_text()
    assert "at least 95% of shaping off" in page
    assert ">rule 95%</text>" in page
    assert "The dashed line is the rule's 95%;" in page
    assert "rule 95.0%" not in page
