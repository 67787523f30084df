"""Summary rows for the advice tests: a config that passes every criterion (`GOOD`), one that
fails each criterion alone (`FAILING`), shaping off (`OFF`), and a resolve rate kept at a given
ratio and low end (`kept`), and a bootstrap table of resamples (`resamples`)."""

import polars as pl

GOOD = {
    "enabled": True,
    "lambda_time": 1 / 60,
    "apply_to": "correct",
    "floor": None,
    "lambda_call_bonus": 0.0,
    "call_bonus_ref": None,
    "clip_low": -3.0,
    "clip_high": 3.0,
    "semantics": "nemo-rl",
    "estimator": "grpo",
    "trained_digest": None,
    "inversion/introduced_group_rate": 0.0,
    "adv/explosion_trained_frac": 0.0,
    "adv/abs_max": 3.0,
    "signal/uncharged_only_rate": 0.0,
    # The outcome after T steps against shaping off's (engine/forecast.py), what the rule reads.
    "forecast/steps": 50.0,
    "forecast/problems_sampled": 200.0,
    "forecast/resolve": 0.50,
    "forecast/resolve_off": 0.50,
    "forecast/resolve_start": 0.40,
    "forecast/resolve_vs_off": 1.0,
    "forecast/resolve_vs_off_low": 0.97,
    "forecast/resolve@long": 0.30,
    "forecast/resolve_off@long": 0.30,
    "forecast/resolve_start@long": 0.20,
    "forecast/resolve_vs_off@long": 1.0,
    "forecast/resolve_vs_off_low@long": 0.96,
    "forecast/solve_minutes_vs_off": -0.5,
    "forecast/solve_minutes_off": 20.0,  # a gain counts beyond 1% of it: 0.2 min
    "forecast/fail_minutes_vs_off": 0.0,
    "forecast/fail_minutes_off": 30.0,  # failures may end 5% of it sooner: 1.5 min
}


FORECAST = [name for name in GOOD if name.startswith("forecast/")]


def summary(*rows: dict) -> pl.DataFrame:
    full = [
        {"config_id": f"c{i}", "label": f"config {i}", **GOOD, **row} for i, row in enumerate(rows)
    ]
    return pl.DataFrame(full, infer_schema_length=None)


def kept(ratio: float, low: float | None, scope: str = "") -> dict:
    """A resolve rate after T steps of `ratio` times shaping off's, its interval's low end `low`
    (the resolve rate itself consistent with the ratio)."""
    off = GOOD[f"forecast/resolve_off{scope}"]
    return {
        f"forecast/resolve_vs_off{scope}": ratio,
        f"forecast/resolve_vs_off_low{scope}": low,
        f"forecast/resolve{scope}": round(off * ratio, 6),
    }


FAILING = {
    "launchable": {"semantics": "internal"},
    "inversion": {"inversion/introduced_group_rate": 0.02},
    "explosion": {"adv/explosion_trained_frac": 0.01, "adv/abs_max": 54.6},
    "resolve": kept(0.97, 0.94),  # the point passes, the low end does not
    "resolve_long": kept(0.80, 0.77, "@long"),
    "uncharged_only": {"signal/uncharged_only_rate": 0.02},
}


OFF = {
    "enabled": False,
    **kept(1.0, 1.0),
    **kept(1.0, 1.0, "@long"),
    "forecast/solve_minutes_vs_off": 0.0,
    "forecast/fail_minutes_vs_off": 0.0,
}


def resamples(values: dict[str, list[tuple[float, float, float, float]]]) -> pl.DataFrame:
    """A bootstrap table: per config, per resample (overall, long, solve, fail) at T."""
    rows = []
    for cid, per in values.items():
        for b, (overall, long, solve, fail) in enumerate(per):
            rows.append(
                {
                    "config_id": cid,
                    "resample": b,
                    "forecast/resolve_vs_off": overall,
                    "forecast/resolve_vs_off@long": long,
                    "forecast/solve_minutes_vs_off": solve,
                    "forecast/fail_minutes_vs_off": fail,
                }
            )
    return pl.DataFrame(rows)
