"""The forecast: what T steps of training under each config do to the logged behaviours, on the
first-step diagnostic's effort model run forward (docs/report.md, "The forecast").

On a stratified sample of problems (`world.World`), each simulated step draws each problem's
group of n rollouts from its current effort (a level from π, an outcome from the level's logged
success rate, held fixed, and the minutes, calls, mask flag and reward of a logged rollout of
that level and outcome: `pool.Pool`), has the engine replay them with its own functions (shaping
and GRPO, the polars plans for filters and peer estimators: `simulate.Replay`, lent by the
engine, which sits above this package), and takes the fixed-KL natural-gradient step of
`maths/effort.py`, applying its effort part (`simulate.simulate`). Every config runs S seeds,
beside its shaping-off twin under the same seeds. The main run and its checks are entries of
`runs.RUNS`, executed by one loop (`runs.forecast`); `horizon.py` reads each run's end into the
summary columns and the resample table, `table.py` its trajectory into the long table. Before
the runs, `backtest.STAGES` prepare their world: the start from the log's first steps
(`start.py`), the causal share per level and skill fitted to the logged shaping-off trajectory
(`fit.py`, on `trajectory.py`'s comparison), the fit's backtest on the log's last third.
"""
