"""Kafka Connect over REST (EFFECTS layer): `client.ConnectClient` (httpx) and the Connector
dynamic resource (`provider`) for the program; `stdlib_client.StdlibConnectClient` (urllib) for
the watcher pod and the Spark stage, which install no httpx; `errors`, `health`, `diff`,
`inputs` (pure).

Nothing is re-exported here: importing `components.connect.errors` or `.stdlib_client` must not
import httpx or pulumi (the watcher pod ships this file empty anyway).
"""
