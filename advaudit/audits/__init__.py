"""The audit loops; each is ``run(cfg) -> dict`` named by ``cfg.audit.run``."""
