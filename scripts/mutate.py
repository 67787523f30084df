"""Mutation testing of the modules that carry correctness: plant one small bug at a time and check
that the tests catch it (issue 28; docs/testing.md records the results).

    uv run python scripts/mutate.py [MODULE ... | --every-module] [--per-module 30] [--seed 0]
        [--jobs 2] [--json results.json] [--list] [--rerun results.json [--every-test]]

Mutants are single-point changes found in each module's syntax tree: a comparison flipped or
loosened (< ↔ <=, == ↔ !=), `and` ↔ `or`, `&` ↔ `|`, a `not` or `~` dropped, `+` ↔ `-`,
`*` ↔ `/`, min ↔ max (also numpy's minimum/maximum, argmin/argmax), True ↔ False, an integer
constant ± 1 and a float constant scaled by 1.5. A seeded sample of `--per-module` mutants per
module is run; each runs the module's test files (MODULES below, chosen as the tests that exercise
it; any other module of the package: the test files that import it, else the whole suite) in a
private copy of the tree, stopping at the first failure. A mutant is killed when the
tests fail or time out, and survives when they pass. Run it by hand, not in CI: a full run takes
tens of minutes on two cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULES: dict[str, list[str]] = {
    "replay_cli/maths/shaping.py": ["test_shaping", "test_reference", "test_properties"],
    "replay_cli/maths/grpo_arrays.py": [
        "test_advantages",
        "test_reference",
        "test_batched",
        "test_rounding",
        "test_torch_grpo",
    ],
    "replay_cli/maths/exact_moments.py": ["test_exact_moments", "test_advantages"],
    "replay_cli/maths/segments.py": ["test_segments", "test_advantages", "test_tables"],
    "replay_cli/maths/rounding.py": ["test_rounding"],
    "replay_cli/maths/advantages.py": [
        "test_advantages",
        "test_filters",
        "test_batched",
        "test_peers",
    ],
    "replay_cli/maths/torch_grpo.py": ["test_torch_grpo"],
    "replay_cli/maths/peers.py": ["test_peers"],
    "replay_cli/maths/filters.py": ["test_filters"],
    "replay_cli/engine/tables.py": ["test_tables", "test_reference", "test_run"],
    "replay_cli/engine/diagnostics.py": [
        "test_tables",
        "test_findings",
        "test_reference",
        "test_rounding",
        "test_filters",
    ],
    "replay_cli/engine/pushes.py": ["test_tables", "test_reference", "test_recommendation"],
    "replay_cli/advice/findings.py": ["test_findings"],
    "replay_cli/advice/recommendation.py": ["test_recommendation"],
    "replay_cli/advice/rule.py": ["test_rule", "test_recommendation"],
    "replay_cli/advice/confidence.py": ["test_confidence"],
    "replay_cli/advice/launch.py": ["test_launch"],
    "replay_cli/advice/texts.py": ["test_texts", "test_recommendation"],
    "replay_cli/analysis/verify.py": ["test_verify", "test_rounding"],
    "replay_cli/rollouts/value_checks.py": [
        "test_validation",
        "test_coerced_values",
        "test_reliability",
    ],
    "replay_cli/maths/effort.py": ["test_first_step"],
    "replay_cli/engine/effort_levels.py": ["test_first_step", "test_batched", "test_world"],
    "replay_cli/maths/effort_step.py": ["test_first_step", "test_simulate"],
    "replay_cli/engine/first_step.py": ["test_first_step", "test_findings"],
    "replay_cli/maths/bootstrap.py": ["test_first_step", "test_recommendation", "test_confidence"],
    "replay_cli/advice/verdict.py": ["test_verdict", "test_recommendation", "test_findings"],
    "replay_cli/catalogue.py": ["test_catalogue"],
    "replay_cli/io/tables.py": ["test_import_table"],
    "replay_cli/io/wandb_run.py": ["test_wandb", "test_import"],
    "replay_cli/io/tensorboard.py": ["test_tensorboard", "test_compare"],
    "replay_cli/maths/problems.py": ["test_first_step", "test_calibrate", "test_world"],
    "replay_cli/engine/simulated.py": ["test_simulate", "test_runs"],
    "replay_cli/forecast/pool.py": ["test_pool", "test_simulate"],
    "replay_cli/forecast/world.py": ["test_world", "test_simulate"],
    "replay_cli/forecast/simulate.py": ["test_simulate", "test_runs"],
    "replay_cli/forecast/horizon.py": ["test_horizon", "test_runs"],
    "replay_cli/forecast/table.py": ["test_runs"],
    "replay_cli/forecast/runs.py": ["test_runs", "test_simulate"],
    "replay_cli/forecast/calibrate.py": ["test_calibrate"],
    "replay_cli/engine/batched.py": ["test_batched", "test_run", "test_reference"],
    "replay_cli/rollouts/validation.py": ["test_validation", "test_reliability"],
    "replay_cli/rollouts/chunks.py": ["test_chunks", "test_validation", "test_run"],
    "replay_cli/io/jsonl.py": ["test_import"],
    "replay_cli/io/gym.py": ["test_import"],
    "replay_cli/io/importers.py": ["test_import"],
    "replay_cli/io/wandb.py": ["test_import"],
    "replay_cli/io/slim.py": ["test_import"],
    "replay_cli/io/train_data.py": ["test_verify", "test_rounding"],
    "replay_cli/io/run_config.py": ["test_runconfig"],
    "replay_cli/parameters.py": ["test_parameters", "test_runconfig", "test_sweep"],
    # Issue 54: report/, cli/, rollouts/ and the top-level modules, which no run had sampled
    # (the audit's gaps there are in test_audit_gaps; each list is quick-loop tests first).
    "replay_cli/report/layouts.py": ["test_audit_gaps", "test_report", "test_html_parts"],
    "replay_cli/report/model.py": ["test_model", "test_audit_gaps", "test_report"],
    "replay_cli/report/pages.py": ["test_audit_gaps", "test_compare"],
    "replay_cli/report/html.py": ["test_html_parts", "test_report", "test_html_report"],
    "replay_cli/report/html_parts.py": ["test_html_parts", "test_charts_scale"],
    "replay_cli/report/compare.py": ["test_compare"],
    "replay_cli/report/write.py": ["test_model", "test_report"],
    "replay_cli/report/tensorboard.py": ["test_tensorboard"],
    "replay_cli/report/wandb_runs.py": ["test_wandb"],
    "replay_cli/report/plots.py": ["test_plots", "test_charts_scale"],
    "replay_cli/cli/terminal.py": ["test_audit_gaps", "test_cli", "test_command_properties"],
    "replay_cli/cli/analysis.py": ["test_audit_gaps", "test_import", "test_cli"],
    "replay_cli/cli/app.py": ["test_cli", "test_reliability", "test_command_properties"],
    "replay_cli/cli/options.py": ["test_cli", "test_sweep", "test_reliability"],
    "replay_cli/rollouts/fit.py": ["test_fit", "test_audit_gaps", "test_reliability"],
    "replay_cli/rollouts/synth.py": ["test_chunks", "test_validation", "test_cli"],
    "replay_cli/defaults.py": ["test_audit_gaps", "test_parameters", "test_runconfig"],
    "replay_cli/config.py": ["test_parameters", "test_runconfig", "test_reliability"],
    "replay_cli/schema.py": ["test_validation", "test_coerced_values", "test_reliability"],
    "replay_cli/api.py": ["test_coerced_values", "test_run", "test_cli"],
}
"""Each module under test and the test files (in tests/) that exercise it; a module of the package
not listed here is tested by the files that import it (`importers_of`)."""


def package_modules() -> list[str]:
    """Every module of the package that has a mutation point (`--every-module`)."""
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "replay_cli").rglob("*.py")
        if points(ast.parse(path.read_text()))
    )


def importers_of(module: str) -> list[str]:
    """The test files that import `module` (`replay_cli.io.tables`, or `from replay_cli.io
    import tables`), by name."""
    dotted = module.removesuffix(".py").replace("/", ".")
    package, _, name = dotted.rpartition(".")
    imports = re.compile(
        rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b"
    )
    return sorted(
        {p.stem for p in (ROOT / "tests").rglob("test_*.py") if imports.search(p.read_text())}
    )


FLIPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
}
NAMES = {
    "min": "max",
    "max": "min",
    "minimum": "maximum",
    "maximum": "minimum",
    "argmin": "argmax",
    "argmax": "argmin",
}


@dataclass
class Mutant:
    module: str
    index: int  # the n-th mutation point of the module, in walk order
    line: int
    what: str
    status: str = ""
    seconds: float = 0.0
    col: int = -1  # the node's column: tells apart two alike mutations on one line


def _skipped(tree: ast.AST) -> set[int]:
    """Ids of nodes never mutated: docstrings and annotations (unevaluated strings here)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
        for field in ("annotation", "returns"):
            sub = getattr(node, field, None)
            if isinstance(sub, ast.AST):
                out.update(id(n) for n in ast.walk(sub))
    return out


def points(tree: ast.AST) -> list[tuple[ast.AST, str, object]]:
    """Every mutation point of a tree: (node, description, how to apply it)."""
    skip = _skipped(tree)
    out: list[tuple[ast.AST, str, object]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in FLIPS:
                    new = FLIPS[type(op)].__name__
                    out.append((node, f"{type(op).__name__} -> {new}", ("cmp", k)))
        elif isinstance(node, (ast.BoolOp, ast.BinOp)) and type(node.op) in FLIPS:
            out.append((node, f"{type(node.op).__name__} -> {FLIPS[type(node.op)].__name__}", "op"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
            out.append((node, f"drop {type(node.op).__name__}", "unary"))
        elif isinstance(node, ast.Name) and node.id in NAMES and isinstance(node.ctx, ast.Load):
            out.append((node, f"{node.id} -> {NAMES[node.id]}", "name"))
        elif isinstance(node, ast.Attribute) and node.attr in NAMES:
            out.append((node, f".{node.attr} -> .{NAMES[node.attr]}", "attr"))
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                out.append((node, f"{v} -> {not v}", "bool"))
            elif isinstance(v, int):
                out.append((node, f"{v} -> {v + 1}", "int"))
            elif isinstance(v, float) and v != 0.0:
                out.append((node, f"{v!r} -> {v * 1.5!r}", "float"))
    return out


def mutated_source(source: str, index: int) -> str:
    """The module's source with mutation point `index` applied (unparsed from the tree)."""
    tree = ast.parse(source)
    node, _, how = points(tree)[index]
    if isinstance(how, tuple):
        node.ops[how[1]] = FLIPS[type(node.ops[how[1]])]()
    elif how == "op":
        node.op = FLIPS[type(node.op)]()
    elif how == "unary":  # `not x` -> `x`, `~mask` -> `mask`
        tree = _Replace(node, node.operand).visit(tree)
    elif how == "name":
        node.id = NAMES[node.id]
    elif how == "attr":
        node.attr = NAMES[node.attr]
    elif how == "bool":
        node.value = not node.value
    elif how == "int":
        node.value = node.value + 1
    elif how == "float":
        node.value = node.value * 1.5
    return ast.unparse(ast.fix_missing_locations(tree))


class _Replace(ast.NodeTransformer):
    """Replace one node (by identity) with another."""

    def __init__(self, old: ast.AST, new: ast.AST) -> None:
        self.old, self.new = old, new

    def generic_visit(self, node: ast.AST) -> ast.AST:
        return self.new if node is self.old else super().generic_visit(node)


def plan(modules: list[str], per_module: int, seed: int) -> list[Mutant]:
    """A seeded sample of mutants per module (all of them when there are fewer)."""
    out = []
    for module in modules:
        tree = ast.parse((ROOT / module).read_text())
        found = points(tree)
        chosen = sorted(
            random.Random(f"{seed}:{module}").sample(range(len(found)), min(per_module, len(found)))
        )
        out.extend(
            Mutant(module, i, found[i][0].lineno, found[i][1], col=found[i][0].col_offset)
            for i in chosen
        )
    return out


def locate(m: Mutant) -> Mutant | None:
    """The earlier mutant in today's source: its index may have moved with edits above it, so it
    is found again by its line and description (None, with a note, when it is gone)."""
    found = points(ast.parse((ROOT / m.module).read_text()))
    same = [
        i
        for i, (node, what, _) in enumerate(found)
        if what == m.what and node.lineno == m.line and m.col in (-1, node.col_offset)
    ]
    if m.index in same:
        return Mutant(m.module, m.index, m.line, m.what, col=m.col)
    if len(same) == 1:
        return Mutant(m.module, same[0], m.line, m.what, col=m.col)
    print(f"gone or ambiguous after edits: {m.module}:{m.line} #{m.index} {m.what}", flush=True)
    return None


def workspace(base: Path) -> Path:
    """A private copy of the parts of the tree the tests read."""
    for name in (
        "replay_cli",
        "tests",
        "data_samples",
        "notebooks",
        "docs",
        "pyproject.toml",
        "README.md",
    ):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, base / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, base / name)
    return base


def test_files(module: str, every_test: bool) -> tuple[str, ...]:
    """The tests run against a mutant of `module`: its mapped files, or the whole suite."""
    names = MODULES.get(module) or importers_of(module)
    if every_test or not names:
        return ("tests",)
    # tests/ mirrors the package's folders: a test file is found by its name wherever it sits.
    return tuple(
        next(p for p in (ROOT / "tests").rglob(f"{t}.py")).relative_to(ROOT).as_posix()
        for t in names
    )


def pytest(
    tests: tuple[str, ...], cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run the tests in a workspace, stopping at the first failure. Hypothesis draws the same
    examples in every run, so a run can be repeated exactly."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_PROFILE": "derandomized"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_one(m: Mutant, base: Path, timeout: float, every_test: bool) -> Mutant:
    target = base / m.module
    original = (ROOT / m.module).read_text()
    target.write_text(mutated_source(original, m.index))
    start = time.perf_counter()
    try:
        done = pytest(test_files(m.module, every_test), base, timeout)
        m.status = "survived" if done.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        m.status = "killed (timeout)"
    finally:
        target.write_text(original)
    m.seconds = round(time.perf_counter() - start, 1)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", default=list(MODULES))
    ap.add_argument(
        "--every-module",
        action="store_true",
        help="every module of the package, not only those MODULES lists",
    )
    ap.add_argument("--per-module", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--list", action="store_true", help="list the sampled mutants and stop")
    ap.add_argument(
        "--rerun", type=Path, help="run again the mutants that survived in this --json file"
    )
    ap.add_argument(
        "--every-test",
        action="store_true",
        help="run the whole suite against each mutant (to confirm survivors), not its module's tests",
    )
    args = ap.parse_args()
    if args.every_module:
        args.modules = package_modules()
    unknown = [m for m in args.modules if not (ROOT / m).is_file()]
    if unknown:
        raise SystemExit(
            f"no such module: {', '.join(unknown)} (give paths like replay_cli/io/tables.py)"
        )
    if args.rerun:
        earlier = [Mutant(**m) for m in json.loads(args.rerun.read_text())]
        mutants = [
            found
            for m in earlier
            if m.status == "survived" and m.module in args.modules
            for found in [locate(m)]
            if found is not None
        ]
    else:
        mutants = plan(args.modules, args.per_module, args.seed)
    if args.list:
        for m in mutants:
            print(f"{m.module}:{m.line} #{m.index} {m.what}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        shared = ROOT.parent / "shared"  # the tests find ../shared beside the tree, else skip
        if shared.is_dir():
            (Path(tmp) / "shared").symlink_to(shared)
        bases = [workspace(Path(tmp) / f"w{k}") for k in range(args.jobs)]
        # The unmutated tree must pass, or every mutant is "killed".
        for tests in sorted({test_files(m.module, args.every_test) for m in mutants}):
            clean = pytest(tests, bases[0])
            if clean.returncode != 0:
                raise SystemExit(
                    f"{' '.join(tests)} fail without a mutant:\n{clean.stdout[-2000:]}"
                )
        free = list(bases)
        results: list[Mutant] = []

        def job(m: Mutant) -> Mutant:
            base = free.pop()
            try:
                return run_one(m, base, args.timeout, args.every_test)
            finally:
                free.append(base)

        with ThreadPoolExecutor(args.jobs) as pool:
            for m in pool.map(job, mutants):
                results.append(m)
                print(
                    f"{m.status:16s} {m.seconds:6.1f}s {m.module}:{m.line} #{m.index} {m.what}",
                    flush=True,
                )
    print()
    print("| module | mutants | killed | survived |")
    print("|---|---:|---:|---:|")
    for module in args.modules:
        mine = [m for m in results if m.module == module]
        killed = sum(m.status.startswith("killed") for m in mine)
        print(f"| {module} | {len(mine)} | {killed} | {len(mine) - killed} |")
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in results], indent=1))


if __name__ == "__main__":
    main()
