"""The spec's numbers the maths and the catalogue share, with no import of their own: the CLI's
start-up reads them through the catalogue and must not pay for numpy."""

EXPLOSION = 3.0
"""|unclipped advantage| above this is an explosion (the PR's recommended clip)."""
