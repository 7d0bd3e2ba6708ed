# Root conftest: makes the repository importable when tests run from a checkout.
