"""Error search in unlabeled pools: scorers, baseline policies, oracles and metrics."""
