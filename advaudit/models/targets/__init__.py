"""Targets: the models under audit, read from any format or served at an endpoint (:func:`advaudit.models.load_target`)."""
