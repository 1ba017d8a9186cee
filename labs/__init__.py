"""Parallelism Labs: marimo lab notebooks on one physics engine (`labs.core`)."""
