"""How advaudit trains its own targets: torch classifiers (Lightning), scikit-learn estimators, epoch checkpoints."""
