"""Eager work on stored tensors: what Finch-Logic cannot express (selection, inserts, argmax,
direct solves) runs on the data."""
