"""Backends: where an experiment runs (sim, local, netns, pi)."""
