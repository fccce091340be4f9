"""Runs unchanged verifiers environments as Temporal activities for Clotho."""
