"""Sweeps that survive failures and scale out: checkpoint globs, end-of-multirun callbacks, resolvers."""

from advaudit.sweep.resolvers import register_resolvers

register_resolvers()
