"""A final answer that must be one JSON value valid against a schema (``cox exec
--output-schema FILE``; Claude Code's ``--json-schema`` is the same mechanism).

A script that asked for JSON must get JSON or a clear failure, never prose it has to guess at.
The model is told the schema after the system prompt; each turn's final answer (the whole text,
or one fenced code block) is parsed and validated with ``jsonschema``; the first that fails goes
back to the model with the validation error, once; a second failure ends the run as an error
that says why. The parsed value is the result's ``structured_output``.

(A minimal version, with the API of the one the Claude Code flags bring —
:meth:`StructuredAnswer.parse`, :meth:`~StructuredAnswer.instructions`,
:meth:`~StructuredAnswer.check` — so ``headless.run(structured=…)`` drives either; ``jsonschema``
is imported only when a schema is given.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cox.slim import dataclass

RETRIES = 1
"""How many times a failing answer is sent back before the run fails."""

_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\Z", re.DOTALL)


class SchemaError(ValueError):
    """The schema itself cannot be used: not JSON, not a file, or not a valid JSON Schema."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One final answer judged: ``ok`` with its ``value``; else ``retry`` (the message for the
    model's next try) or, with no try left, ``error`` (why the run failed)."""

    ok: bool
    value: Any = None
    retry: str | None = None
    error: str | None = None


class StructuredAnswer:
    """One session's schema, and how many retries its current answer has used."""

    def __init__(self, schema: Any, flag: str = "--json-schema") -> None:
        from jsonschema import validators  # type: ignore[import-untyped]
        from jsonschema.exceptions import SchemaError as BadSchema  # type: ignore[import-untyped]

        if not isinstance(schema, dict | bool):
            raise SchemaError(f"{flag} wants a JSON Schema object, got JSON {type(schema).__name__}")
        cls = validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except BadSchema as exc:
            raise SchemaError(f"{flag} is not a valid JSON Schema: {exc.message}") from None
        self.schema = schema
        self.flag = flag
        self._validator = cls(schema)
        self.tries = 0

    @classmethod
    def parse(cls, text: str, flag: str = "--json-schema") -> StructuredAnswer:
        """From a flag's value: the schema's JSON text, or the path of a file holding it."""
        stripped = text.strip()
        if not stripped:
            raise SchemaError(f"{flag} is empty; pass a JSON Schema (its JSON text, or a file holding it)")
        if stripped[0] not in "{[":
            try:
                stripped = Path(stripped).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SchemaError(f"{flag}: cannot read {text} ({getattr(exc, 'strerror', None) or exc}); pass "
                                  "a file holding a JSON Schema") from None
        try:
            schema = json.loads(stripped)
        except ValueError as exc:
            raise SchemaError(f"{flag}: {text} is not JSON ({exc}); pass a JSON Schema") from None
        return cls(schema, flag)

    def instructions(self) -> str:
        """What the model is told after the system prompt (byte-stable for the session)."""
        schema = json.dumps(self.schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return ("# The final answer's format\n\n"
                "Your final answer (the reply with no tool call that ends your work) must be exactly one JSON "
                "value, valid against this JSON Schema, with no prose around it:\n\n" + schema)

    def check(self, text: str) -> Verdict:
        """Judge one turn's final text; a final verdict starts the count again."""
        problem, value = self._problem(text)
        if problem is None:
            self.tries = 0
            return Verdict(True, value)
        if self.tries < RETRIES:
            self.tries += 1
            return Verdict(False, retry=(
                f"Your final answer is not valid for the required JSON Schema: {problem}. Reply again with only "
                "the corrected JSON value, nothing else."))
        self.tries = 0
        return Verdict(False, error=f"the final answer does not match {self.flag} after {RETRIES + 1} tries: "
                                    f"{problem}")

    def _problem(self, text: str) -> tuple[str | None, Any]:
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        if not body:
            return "the answer is empty", None
        try:
            value = json.loads(body)
        except ValueError as exc:
            return f"it is not JSON ({exc})", None
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

        error = best_match(self._validator.iter_errors(value))
        if error is None:
            return None, value
        where = error.json_path if error.json_path != "$" else "the top level"
        return f"{error.message} (at {where})", None
