"""The web chat: ``POST /api/chat`` relays one model response as server-sent events.

The page keeps the conversation and posts it whole; the server adds the system prompt and
streams one request through cox's own provider adapter (the one ``choose_provider`` picked from
the environment: the key stays on the server, and ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``
point it at a gateway). The system prompt — a short base plus the workspace's AGENTS.md /
CLAUDE.md files, as a session reads them — is built once at start-up, so it is byte-identical on
every request and the prompt cache holds (``COX_PROJECT_CONTEXT=0`` drops the files). The
adapter marks the cache breakpoint on the newest block of each request.

Frames: ``start`` {model}, ``block`` {index, block}, ``delta`` {index, kind, text}, ``done``
{model, stop_reason, stop_details, history, usage} and ``error`` {status, message}. ``history``
is the posted messages plus the assistant content exactly as the adapter assembled it (thinking
signatures included), for the page to send back unchanged; it is null on a refusal, so the page
leaves the turn and the prompt that caused it out and shows them greyed. A request the page
drops (the stream closed) is cancelled.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .frames import Frame
from .validate import Settings

BASE_PROMPT = ("You are cox's web chat, talking with a software developer about the project in {cwd}. "
               "Answer plainly and precisely; use Markdown code blocks for code.")
MAX_TOKENS = 64000


def system_prompt(cwd: Path, cox_home: Path, env: dict[str, str] | None = None) -> list[str]:
    """``ModelRequest.system`` for every chat request: [no tools, base prompt, instruction files, ""]."""
    env = dict(os.environ) if env is None else env
    files = ""
    if env.get("COX_PROJECT_CONTEXT", "1") != "0":
        from cox.actors.session.instructions import instruction_block

        files = instruction_block(cwd, home=Path.home(), cox_home=cox_home)
    return ["", BASE_PROMPT.format(cwd=cwd), files, ""]


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


class Chat:
    def __init__(self, provider: Any, system: list[str], overrides: dict[str, Any]) -> None:
        self.provider = provider
        self.system = system
        self.overrides = overrides

    def start(self, s: Settings, deliver: Callable[[Frame | None], None]) -> Callable[[], None]:
        """Stream ``s`` in a thread, frames to ``deliver`` (None after the last); returns cancel."""
        from cox.supervisors import CancelScope

        scope = CancelScope("web-chat")
        threading.Thread(target=self._run, args=(s, deliver, scope), name="web-chat", daemon=True).start()

        def cancel() -> None:
            scope.cancel("the page closed the stream")

        return cancel

    def _run(self, s: Settings, deliver: Callable[[Frame | None], None], scope: Any) -> None:
        from cox.actors.provider.catalog import describe
        from cox.actors.provider.stream import _Assembler, scrubbed
        from cox.protocol.model import ModelRequest, ProviderError, TextPart, ThinkingPart

        request = ModelRequest(model=s.model, system=self.system, tools=[],
                               messages=[{"role": msg["role"], "content": _blocks(msg["content"])} for msg in s.messages],
                               max_output_tokens=min(MAX_TOKENS, describe(s.model, self.overrides).max_output),
                               effort=s.effort, thinking_display=s.thinking_display)  # the design's request fields
        asm = _Assembler()
        opened = -1
        try:
            deliver(("start", {"model": s.model}))
            for d in self.provider.stream(request, scope):
                if scope.cancelled:
                    break
                shown = asm.feed(d)
                if not shown or not isinstance(d, (TextPart, ThinkingPart)):
                    continue
                kind = "text" if isinstance(d, TextPart) else "thinking"
                if kind == "thinking" and s.thinking_display == "omitted":
                    continue
                index = len(asm.content) - 1
                if index != opened:
                    opened = index
                    deliver(("block", {"index": index, "block": {"type": kind}}))
                deliver(("delta", {"index": index, "kind": kind, "text": shown}))
            if not scope.cancelled:
                content = asm.finish()
                refused = asm.stop == "refusal"
                history = None if refused else [*s.messages, {"role": "assistant", "content": content}]
                u = asm.usage
                deliver(("done", {"model": s.model, "stop_reason": asm.stop,
                                  "stop_details": "the model refused; rephrase the prompt" if refused else None,
                                  "history": history,
                                  "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                            "cache_read_input_tokens": u.cache_read_tokens,
                                            "cache_creation_input_tokens": u.cache_write_tokens}}))
        except ProviderError as exc:
            deliver(("error", {"status": exc.status, "message": str(scrubbed(exc))}))
        except Exception as exc:  # an adapter bug: the page says so, the server goes on
            deliver(("error", {"status": None, "message": f"model stream failed: {type(exc).__name__}: {exc}"}))
        finally:
            deliver(None)
