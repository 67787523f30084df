"""Charts at 2, 12 and 100 configs: small multiples beyond 8 configs, a few highlighted configs
per step curve, and legends that stay inside the figure."""

import polars as pl
import pytest

from replay_cli import api
from replay_cli.config import ForecastSettings
from replay_cli.parameters import expand
from replay_cli.report import plots
from replay_cli.report.facets import layout
from replay_cli.report.options import ReportOptions

pytestmark = (
    pytest.mark.slow
)  # every chart drawn at three sweep sizes: `-m "not slow"` skips it, CI runs it

GRIDS = {
    2: {"lambda_time": [0.0, 1 / 60]},
    12: {
        "lambda_time": [1 / 240, 1 / 120, 1 / 60],
        "apply_to": ["all", "correct"],
        "floor": [None, 0.05],
    },
    100: {
        "lambda_time": [0.0, 1 / 240, 1 / 120, 1 / 60, 1 / 30],
        "apply_to": ["all", "correct"],
        "floor": [None, 0.02, 0.05, 0.1, 0.2],
        "clip_low": [None, -3.0],
    },
}


@pytest.fixture(scope="module", params=sorted(GRIDS))
def sweep(request, tmp_path_factory):
    from replay_cli.rollouts.synth import synth_rollouts

    path = tmp_path_factory.mktemp("scale") / "rollouts.parquet"
    synth_rollouts(steps=2, groups_per_step=6, group_size=4, seed=5).write_parquet(path)
    configs = expand({"clip_high": 3.0}, GRIDS[request.param])
    assert len(configs) == request.param
    ahead = ForecastSettings(steps=3, seeds=1, check_budgets=False)
    options = ReportOptions(forecast=ahead)  # every chart, the forecast's too
    return api.replay(api.load([path]), configs, options)


def _inside(fig):
    """Every legend and visible axes lies within the figure's canvas."""
    fig.canvas.draw()
    box = fig.bbox
    artists = [*fig.legends, *(ax for ax in fig.axes if ax.get_visible())]
    for artist in artists:
        extent = artist.get_window_extent()
        assert extent.x0 >= box.x0 - 1, artist
        assert extent.y0 >= box.y0 - 1, artist
        assert extent.x1 <= box.x1 + 1, artist
        assert extent.y1 <= box.y1 + 1, artist


def test_every_chart_fits_its_figure(sweep, tmp_path):
    figures = plots.report_figures(sweep)
    n = sweep.result.summary.height
    for name, fig in figures.items():
        _inside(fig)
        fig.savefig(tmp_path / f"{name}_{n}.png", dpi=60)
    assert ("heatmap_lambda_floor" in figures) == (n >= 12)
    assert "frontier" in figures


def test_lines_per_panel_stay_few(sweep):
    n = sweep.result.summary.height
    fig = plots.lambda_chart(sweep.result.summary, "signal_vs_lambda")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    lay = layout(sweep.result.summary)
    assert len(panels) == len(lay.panels)
    if n > 8:
        assert lay.facets == ("apply_to",)  # the one categorical parameter that varies
        assert len(panels) == 2
    else:
        assert len(panels) == 1
    for ax, (_, part) in zip(panels, lay.panels, strict=True):
        series = {lay.series[c] for c in part["config_id"]}
        assert len(ax.get_lines()) == 2 * len(series)  # each series and its shaping-off line
        assert len(series) <= 10


def test_step_curves_draw_the_highlighted_configs_only(sweep):
    fig = plots.step_curves(sweep.result.steps, sweep.result.summary)
    assert all(len(ax.get_lines()) <= 3 for ax in fig.axes)
    chosen = sweep.result.summary["config_id"][:2].to_list()
    fig = plots.step_curves(sweep.result.steps, sweep.result.summary, chosen)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert (
        labels == sweep.result.summary.filter(pl.col("config_id").is_in(chosen))["label"].to_list()
    )


def test_advantage_bands_come_from_the_summary(sweep):
    fig = plots.advantage_bands(sweep.result.summary)
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == sweep.result.summary.height
    first = ax.collections[1].get_segments()[0]  # p01-p99 band of config #1 (top row)
    row = sweep.result.summary.row(0, named=True)
    assert first[0][0] == pytest.approx(row["adv/p01"])
    assert first[1][0] == pytest.approx(row["adv/p99"])
