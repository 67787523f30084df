"""Exceptions raised by the replay_cli library; the CLI maps every ReplayError to exit code 2."""


class ReplayError(Exception):
    """Base class for errors caused by bad input or usage, not by a bug."""


class SchemaError(ReplayError):
    """The rollout table is missing columns, has wrong types or invalid values."""


class ConfigError(ReplayError):
    """A shaping, advantage or sweep parameter is invalid."""


def missing_extra(task: str, extra: str, also: str = "") -> ConfigError:
    """The error (exit 2) for `task` without the optional extra `replay-cli[extra]` installed;
    `also` names anything else it needs."""
    name = f"replay-cli[{extra}]"
    return ConfigError(
        f"{task} needs the optional extra {name}: pip install '{name}' "
        f"(in a checkout: uv sync --extra {extra}){also}."
    )


class InputFileError(ReplayError):
    """An input path is missing, unreadable or not a Parquet file."""


class OutputExistsError(ReplayError):
    """The report directory exists and --force was not given."""


class EstimatorError(ReplayError):
    """The estimator refuses this input, as its trainer would."""


class TaskFailedError(ReplayError):
    """A Ray task failed for good (its worker died on every try); no report is written."""


class RowError(ValueError):
    """A JSON record that cannot be turned into a rollout row (reported with its file:line)."""


class FileLevelError(RowError):
    """A record that shows the whole file cannot be imported as asked (never skipped line by line)."""


class NotRolloutsError(FileLevelError):
    """A JSON record that is no rollout at all: the file is another kind."""


class GroupKeyError(FileLevelError):
    """Rows with no group key: no `_ng_task_index`, no instance id, no --group-size."""
