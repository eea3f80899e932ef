"""Results on disk, plots, W&B logging and checkpoint comparison."""
