"""The performance benchmark: `python -m bench` (see bench/__main__.py and README "Performance").

Every figure is measured beside a ceiling from the same run on the same machine and server
configuration, because on shared machines only ratios are comparable between runs."""
