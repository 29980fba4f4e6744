"""Offline evaluation: corpus order and accuracy metrics."""
