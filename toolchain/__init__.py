"""The project's build tooling that is Python: the container images (images/)."""
