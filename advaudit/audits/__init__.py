"""The audit loops, each ``run(cfg) -> dict`` named by ``cfg.audit.run._target_``, and the reports they write."""
