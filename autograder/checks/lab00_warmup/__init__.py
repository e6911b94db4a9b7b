"""Checks for the sample lab 00-warmup."""
