"""Tests for replay_cli.report.html: index.html is self-contained, holds the report's own
numbers, and works in a real browser (Debian's headless Chromium driven by Playwright)."""

import itertools
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.cli.app import app
from replay_cli.parameters import expand
from replay_cli.report.html_parts import CSS
from replay_cli.report.layouts import SUMMARY_GROUPS

from factories import write_small_synth

pytestmark = (
    pytest.mark.slow
)  # a real browser and whole reports: `-m "not slow"` skips it, CI runs it

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    path = write_small_synth(root / "rollouts.parquet", seed=11, groups_per_step=24)
    grid = {
        "lambda_time": [0.0, 1 / 120, 1 / 30],
        "apply_to": ["all", "correct"],
        "floor": [None, 0.05],
    }
    configs = expand({}, grid)
    out = root / "report"
    api.replay_to_report([path], configs, out, charts=True)
    return out


def test_index_is_self_contained(report):
    html = (report / "index.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html
    assert "url(" not in html
    charts = list((report / "charts").glob("*.png"))
    # The forecast chart once, in its section; the frontier once, as the SVG.
    assert html.count("data:image/png;base64,") == len(charts) - 1
    assert html.count('id="frontier-svg"') == 1
    # Each chart links to its full-size PNG beside the page (a relative link: nothing fetched).
    assert html.count('<a href="charts/') == len(charts) - 1
    sections = re.findall(r'<section id="([a-z_]+)"', html)
    assert sections == [
        "decision",
        "forecast",
        "findings",
        "summary",
        "replayed",
        "charts",
        "configs",
        "guide",
    ]
    assert "docs/report.md" in re.search(r'<section id="guide">(.*?)</section>', html).group(1)


def test_index_numbers_are_the_tables_numbers(report):
    html = (report / "index.html").read_text()
    summary = pl.read_parquet(report / "summary.parquet")
    verdict = pl.read_parquet(report / "recommendation.parquet")
    roles = dict(verdict.select("config_id", "role").rows())
    for row in summary.iter_rows(named=True):
        cells = re.search(rf'<tr id="row-{row["config_id"]}">(.*?)</tr>', html).group(1)
        values = re.findall(r'data-v="([^"]*)"', cells)
        assert values[1] == row["label"]
        assert values[2] == roles[row["config_id"]]
        # Each metric cell holds the exact value (its repr) for sorting, in the page's order.
        columns = [name for _, _, names in SUMMARY_GROUPS for name in names]
        for value, name in zip(values[4:], columns, strict=False):
            if row[name] is None:
                assert value == ""
            else:
                assert float(value) == row[name]
    found = pl.read_parquet(report / "findings.parquet")
    for text in found.filter(pl.col("headline"))["text"]:
        assert text.replace("'", "&#x27;").replace(">", "&gt;") in html
    # The decision section leads with the verdict's recommended config and its overrides.
    decision = re.search(r'<section id="decision">(.*?)</section>', html, re.DOTALL).group(1)
    recommended = verdict.filter(pl.col("role") == "recommended").row(0, named=True)
    assert recommended["label"].replace("'", "&#x27;") in decision
    assert recommended["overrides"] in decision.replace("<wbr>", "")  # break points, no text
    assert recommended["yaml"].split("\n")[0] in decision
    assert decision.count('class="copy"') >= 2  # the overrides and the YAML (and a trade's)


def test_report_command_rerenders_and_refuses_a_non_report(report, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(report, copy)
    (copy / "index.html").unlink()
    findings = pl.read_parquet(copy / "findings.parquet")
    findings.head(0).write_parquet(copy / "findings.parquet")  # judged again, not copied
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(copy / "index.html")
    assert pl.read_parquet(copy / "findings.parquet").equals(
        pl.read_parquet(report / "findings.parquet")
    )

    def body(path):  # the page less its title, which names the directory
        return re.sub(r"<title>.*?</title>|<header>.*?</header>", "", path.read_text())

    assert body(copy / "index.html") == body(report / "index.html")


def test_a_report_without_charts_points_at_itself(tmp_path):
    from replay_cli.rollouts.synth import synth_rollouts

    path = tmp_path / "rollouts.parquet"
    synth_rollouts(steps=2, groups_per_step=4, group_size=4, seed=3).write_parquet(path)
    out = tmp_path / "single"
    result = CliRunner().invoke(app, ["replay", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text()
    assert f"<code>replay-cli plot {out}</code>" in html
    assert ".tmp-" not in html
    assert "--no-charts" not in html


@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_report_of_an_earlier_version_is_refused_with_exit_2(report, tmp_path, command):
    """A report written before the verdict was stored is not re-rendered: the error names the
    directory and says to rerun the replay, and the directory is left as it was."""
    old = tmp_path / "old"
    shutil.copytree(report, old)
    (old / "recommendation.parquet").unlink()
    before = sorted(p.name for p in old.rglob("*"))
    result = CliRunner().invoke(app, [command, str(old)])
    assert result.exit_code == 2, result.output
    assert f"{old} was written by an earlier version of replay-cli" in result.output
    assert "rerun the replay" in result.output
    assert sorted(p.name for p in old.rglob("*")) == before


def test_compare_and_explain_directories_get_an_index(report, tmp_path):
    out = tmp_path / "cmp"
    result = CliRunner().invoke(app, ["compare", str(report), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Report: {out / 'index.html'}")
    html = (out / "index.html").read_text()
    assert '<section id="comparison">' in html


def _chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (.ci/run does it with apt-get)")
        pytest.skip("needs Debian's chromium: apt-get install chromium")
    return found


def test_report_in_a_real_browser(report, tmp_path):
    from playwright.sync_api import sync_playwright

    summary = pl.read_parquet(report / "summary.parquet")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors, requests = [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        url = (report / "index.html").as_uri()
        page.goto(url)
        page.wait_for_load_state("load")
        page.screenshot(path=str(tmp_path / "index.png"), full_page=False)

        rows = page.locator("#summary-table tbody tr")
        assert rows.count() == summary.height
        # Click "max |adv|": ascending, then descending.
        headers = page.locator("#summary-table thead tr:last-child th")
        names = headers.all_inner_texts()
        col = names.index("max |adv|")
        headers.nth(col).click()
        cells = f"#summary-table tbody tr td:nth-child({col + 1})"
        ascending = [
            float(v) for v in page.locator(cells).evaluate_all("els => els.map(e => e.dataset.v)")
        ]
        assert ascending == sorted(ascending)
        assert headers.nth(col).get_attribute("aria-sort") == "ascending"
        headers.nth(col).click()
        descending = [
            float(v) for v in page.locator(cells).evaluate_all("els => els.map(e => e.dataset.v)")
        ]
        assert descending == sorted(ascending, reverse=True)
        # Filter by a parameter value.
        page.select_option("select[data-filter]:near(:text('apply_to'))", "correct")
        visible = page.locator("#summary-table tbody tr:visible")
        assert visible.count() == summary.filter(pl.col("apply_to") == "correct").height
        # The frontier follows the filter: only points of shown configs stay visible.
        shown = set(summary.filter(pl.col("apply_to") == "correct")["config_id"])
        for link in page.locator("a.pt-link").all():
            ids = set(link.get_attribute("data-ids").split())
            assert link.is_visible() == bool(ids & shown)
        page.select_option("select[data-filter]:near(:text('apply_to'))", "*")
        # A click on the recommended point opens that config's detail.
        verdict = pl.read_parquet(report / "recommendation.parquet")
        best = verdict.filter(pl.col("role") == "recommended")["config_id"][0]
        point = page.locator(f"a.pt-link[data-ids~='{best}']")
        point.click()
        assert page.locator(f"details#cfg-{best}").evaluate("d => d.open")
        # The summary downloads as CSV with every config.
        with page.expect_download() as download:
            page.locator("a[download='summary.csv']").click()
        csv = pl.read_csv(download.value.path())
        assert csv["config_id"].to_list() == summary["config_id"].to_list()
        # Every chart and frontier plot has a size.
        charts = page.locator("img.chart, svg.scatter")
        # Every PNG but frontier.png (the SVG is the page's frontier), and the SVG.
        assert charts.count() == len(list((report / "charts").glob("*.png")))
        for i in range(charts.count()):
            box = charts.nth(i).bounding_box()
            assert box is not None
            assert box["width"] > 0
            assert box["height"] > 0
        natural = page.locator("img.chart").evaluate_all("els => els.map(e => e.naturalWidth)")
        assert all(w > 0 for w in natural)
        page.screenshot(path=str(tmp_path / "index_full.png"), full_page=True)
        # At 1280 px the first hazard column is on screen; context is folded until asked for.
        wide = browser.new_page(viewport={"width": 1280, "height": 900})
        wide.goto(url)
        hazard = wide.locator("#summary-table thead tr:last-child th.g-hazards").first
        box = hazard.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= 1280
        context = wide.locator("#summary-table thead tr:last-child th.g-context").first
        assert not context.is_visible()
        wide.check("#show-context")
        assert context.is_visible()
        # The avoided configs and their reasons are open, not folded.
        assert wide.locator("#decision ul.avoid li").first.is_visible()
        # On a phone the page does not scroll sideways (wide tables scroll inside their box).
        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(url)
        overflow = phone.evaluate("document.documentElement.scrollWidth")
        assert overflow <= 390
        phone.screenshot(path=str(tmp_path / "index_phone.png"), full_page=False)
        browser.close()
    assert errors == []
    assert requests == [url]  # the page itself; charts are data: URIs, nothing else is fetched


LINES_OF_CODE = """() => {
  const code = document.querySelector('pre.overrides code');
  const range = document.createRange();
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  const lines = []; let line = '', top = null, node;
  while ((node = walker.nextNode())) {
    for (let i = 0; i < node.length; i++) {
      range.setStart(node, i); range.setEnd(node, i + 1);
      const y = Math.round(range.getBoundingClientRect().top);
      if (top !== null && y !== top) { lines.push(line); line = ''; }
      top = y; line += node.data[i];
    }
  }
  lines.push(line);
  return lines;
}"""


def test_a_long_override_wraps_at_its_equals_sign_not_inside_its_number(tmp_path):
    """On a 390-px phone the launch overrides wrap at spaces and after `=`: λ's exact float stays
    whole on one line, and a copy takes the text without the break points."""
    from playwright.sync_api import sync_playwright

    from replay_cli.report.html_parts import launch_block

    overrides = (
        "++grpo.time_efficiency.enabled=true "
        "++grpo.time_efficiency.lambda_time=0.016666666666666666 "
        "++grpo.time_efficiency.apply_to=correct"
    )
    block = launch_block(overrides, "overrides")
    assert "lambda_time=<wbr>0.016666666666666666" in block
    html = tmp_path / "o.html"
    html.write_text(f"<!doctype html><meta charset=utf-8><style>{CSS}</style>{block}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 600})
        page.goto(html.as_uri())
        lines = [line.strip() for line in page.evaluate(LINES_OF_CODE)]
        text = page.evaluate("() => document.querySelector('pre.overrides code').textContent")
        browser.close()
    assert len(lines) > 1  # it wraps at this width
    assert "0.016666666666666666" in lines
    assert not any(
        re.search(r"\d$", a) and re.match(r"\d", b) for a, b in itertools.pairwise(lines)
    )
    assert text == overrides
