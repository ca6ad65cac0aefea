"""``--json-schema``: the final answer must be one JSON value valid against a schema.

A script that asked for JSON must get JSON or a clear failure, never prose it has to guess at.
The model is told the schema (after the system prompt); its final answer is parsed (the whole
text, or one fenced code block) and validated with ``jsonschema``. The first answer that fails
is sent back with the validation error, once; a second failure ends the run as an error that
says why. The parsed value is the result's ``structured_output``.

Used by ``cox run`` (``headless.run``) and by the Claude Code dialect's driver: each turn's final
text goes to :meth:`StructuredAnswer.check`, which says what to do next. ``jsonschema`` is
imported only when a schema is given.
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
    """What one final answer means. ``ok``: ``value`` is the answer; else ``retry`` is the
    message to send the model for another try, or (no tries left) ``error`` says why it failed."""

    ok: bool
    value: Any = None
    retry: str | None = None
    error: str | None = None


class StructuredAnswer:
    """One session's schema and how many retries its current answer has used."""

    def __init__(self, schema: Any) -> None:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError as BadSchema

        if not isinstance(schema, dict | bool):
            raise SchemaError(f"--json-schema wants a JSON Schema object, got JSON {type(schema).__name__}")
        cls = validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except BadSchema as exc:
            raise SchemaError(f"--json-schema is not a valid JSON Schema: {exc.message}") from None
        self.schema = schema
        self._validator = cls(schema)
        self.tries = 0

    @classmethod
    def parse(cls, text: str) -> StructuredAnswer:
        """From a flag's value: the schema's JSON text, or the path of a file holding it."""
        stripped = text.strip()
        if not stripped:
            raise SchemaError("--json-schema is empty; pass a JSON Schema (its JSON text, or a file holding it)")
        if stripped[0] not in "{[" and Path(stripped).is_file():
            try:
                stripped = Path(stripped).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SchemaError(f"--json-schema: cannot read {text}: {exc}") from None
        try:
            schema = json.loads(stripped)
        except ValueError as exc:
            raise SchemaError(f"--json-schema is neither JSON nor a file ({exc}); pass the schema's JSON text "
                              "or the path of a file holding it") from None
        return cls(schema)

    def instructions(self) -> str:
        """What the model is told, once, after the system prompt (byte-stable for the session)."""
        schema = json.dumps(self.schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return ("# The final answer's format\n\n"
                "Your final answer (the reply with no tool call that ends your work) must be exactly one JSON "
                "value, valid against this JSON Schema, with no prose around it:\n\n" + schema)

    def check(self, text: str) -> Verdict:
        """Judge one turn's final text. A failure with a retry left asks for another try; a
        final verdict (valid, or no retry left) starts the count again for the next answer."""
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
        return Verdict(False, error=f"the final answer does not match --json-schema after {RETRIES + 1} tries: "
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
        from jsonschema.exceptions import best_match

        error = best_match(self._validator.iter_errors(value))
        if error is None:
            return None, value
        where = error.json_path if error.json_path != "$" else "the top level"
        return f"{error.message} (at {where})", None
