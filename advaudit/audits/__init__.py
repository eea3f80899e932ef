"""The audit loops, each ``run(cfg) -> dict`` named by ``cfg.audit.run``, and the reports they write."""
