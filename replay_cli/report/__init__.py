"""The report directory: Parquet tables and manifest (write), reading one back (read),
`index.html`, charts and their layout, and cross-report comparison."""
