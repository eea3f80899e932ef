"""Reports across runs: the leaderboard, where examiners concentrate, offline W&B runs read back (above the audits)."""
