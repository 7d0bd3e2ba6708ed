"""Transformations: autodiff (ad) and, later, batching."""
