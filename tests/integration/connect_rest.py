"""Connect's REST API as the integration tests drive it by hand (what an operator would do)."""

from __future__ import annotations

from tests.integration.harness import wait_until


def pause_connector(url: str, name: str, auth: tuple[str, str] | None, timeout_s: float = 60) -> None:
    """Pause connector `name` and return once it and every task of it report PAUSED: Connect
    pauses tasks asynchronously, and a task not yet paused still copies what is written next."""
    import httpx

    httpx.put(f"{url}/connectors/{name}/pause", auth=auth, timeout=10).raise_for_status()

    def paused() -> bool:
        got = httpx.get(f"{url}/connectors/{name}/status", auth=auth, timeout=10)
        if got.status_code != 200:
            return False
        status = got.json()
        states = [status["connector"]["state"], *(task["state"] for task in status.get("tasks", []))]
        return bool(status.get("tasks")) and set(states) == {"PAUSED"}

    wait_until(paused, timeout_s, f"connector {name} and its tasks PAUSED", poll_s=0.2)
