"""An MCP server with many tools, for the deferral tests (``mcp.max_loaded_tools``).

``COX_TEST_TOOLS`` (default 30) plain tools ``t00``, ``t01``, … ("Do chore number N.") and one
findable tool, ``weather_forecast``, that writes its ``city`` to ``COX_TEST_MARKER`` when called
(proof the call reached the server).
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("cox-many")

for _i in range(int(os.environ.get("COX_TEST_TOOLS", "30"))):
    def _chore(n: int = _i) -> str:
        return f"chore {n} done"

    server.tool(name=f"t{_i:02d}", description=f"Do chore number {_i}.")(_chore)


@server.tool(description="Forecast the weather for a city.")
def weather_forecast(city: str) -> str:
    marker = os.environ.get("COX_TEST_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{city}\n")
    return f"sunny in {city}"


if __name__ == "__main__":
    server.run()
