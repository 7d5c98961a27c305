"""The `kubernetes` platform: pure object rendering and `deploy`, which registers the objects."""
