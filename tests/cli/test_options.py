"""Tests for replay_cli.cli.options: every option default of `replay` and `sweep` is the default
of the setting it fills (written once, in defaults.py or a pydantic field)."""

from replay_cli.cli.options import RunOptions, _option_types
from replay_cli.config import EffortSettings, ForecastSettings
from replay_cli.report.options import ReportOptions

DEFAULTS = {name: default for name, (_, default) in _option_types().items()}


def test_every_run_option_defaults_to_its_models_default():
    options = RunOptions(**{name: DEFAULTS[name] for name in RunOptions.__dataclass_fields__})
    built = options.report_options(charts=False)
    assert built == ReportOptions(highlight=())
    assert built.effort == EffortSettings()
    assert built.forecast == ForecastSettings()


def test_the_forecast_options_read_the_fields_defaults():
    measure, ahead = EffortSettings.model_fields, ForecastSettings.model_fields
    assert DEFAULTS["step_kl"] == measure["step_kl"].default == 0.001
    assert DEFAULTS["resamples"] == measure["resamples"].default == 200
    assert DEFAULTS["steps"] == ahead["steps"].default == 50
    assert DEFAULTS["seeds"] == ahead["seeds"].default == 4
    assert DEFAULTS["problems"] == ahead["problems"].default == 150
    assert DEFAULTS["chunk_rows"] == ReportOptions.model_fields["chunk_rows"].default
    assert DEFAULTS["forecast"] is True
