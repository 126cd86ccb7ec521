"""The operator's view: what a person sees in the Dagster UI and the CLI while the pipeline runs."""
