"""Beyond one host: compare two reports, judge a fleet against its peers, baselines, the Slurm health check.

The judgement (compare, outliers, baseline, healthcheck) is pure: it reads report dicts as written by
`--output`/`--json` and returns data. Only slurm.py runs programs (srun, scontrol) and commands.py is
the typer front end.
"""
