"""The conditional generators of the fault tests: the model, its training, its folded inference copy."""
