"""Generative fault tests and the pixel-perturbation baseline."""
