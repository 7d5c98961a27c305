"""The `docker` platform: pure container specs (`specs`) and `deploy`, which runs them."""
