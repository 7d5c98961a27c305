"""Building the project's container images from Debian packages and Maven jars (bin/bootstrap --images)."""
