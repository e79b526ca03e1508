"""The `offline-judge` model of the local server: the LLM judge's prompt -> the offline judge.

turngate/scoring/judges/llm.py renders a case as sections (conversation, tool calls with JSON arguments
and results, final answer, rubric). `case_from_prompt` reads that rendering back into the
(row, Turn) pair the offline judge takes, so a gate run with `--judge openai:offline-judge`
through the server gets the verdicts of `--judge offline` in process; tests check the round
trip on real Turns, so a change to the rendering that breaks it shows up at once.
"""
from __future__ import annotations

import json
import re

from turngate.core.turn import Message, ToolCall, Turn
from turngate.scoring.case import Case
from turngate.sources.dataset import Expect, Inputs, Row

CONVERSATION, TOOLS, ANSWER, RUBRIC = "## Conversation\n", "## Tool calls", "\n## Final answer\n", "\n## Rubric\n"
_ROLE = re.compile(r"^(user|assistant): ", re.M)
_decoder = json.JSONDecoder()


class PromptError(ValueError):
    """The prompt is not the LLM judge's rendering of a case."""


def _messages(text: str) -> list[Message]:
    starts = list(_ROLE.finditer(text))
    if text.strip() and (not starts or starts[0].start() != 0):
        raise PromptError("conversation lines must start with 'user: ' or 'assistant: '")
    out = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() - 1 if i + 1 < len(starts) else len(text)
        out.append(Message(role=m.group(1), content=text[m.end():end]))
    return out


def _tool_calls(text: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    pos = 0
    while pos < len(text):
        if not text.startswith("- ", pos):
            raise PromptError(f"tool call line does not start with '- ': {text[pos:pos + 60]!r}")
        paren = text.index("(", pos)
        name = text[pos + 2:paren]
        try:
            args, end = _decoder.raw_decode(text, paren + 1)
        except ValueError as exc:
            raise PromptError(f"arguments of {name} are not JSON") from exc
        if not text.startswith(") -> ", end):
            raise PromptError(f"tool call {name} has no ' -> ' reply")
        pos = end + len(") -> ")
        call = ToolCall(name=name, arguments=args)
        if text.startswith("NO REPLY", pos):
            pos += len("NO REPLY")
        elif text.startswith("ERROR ", pos):
            # error text runs to the next call line (it may hold newlines)
            nxt = re.compile(r"\n- [A-Za-z_][\w.-]*\(").search(text, pos)
            end = nxt.start() if nxt else len(text)
            call.error = text[pos + len("ERROR "):end]
            pos = end
        else:
            try:
                call.result, pos = _decoder.raw_decode(text, pos)
            except ValueError as exc:
                raise PromptError(f"result of {name} is not JSON") from exc
        calls.append(call)
        if text.startswith("\n", pos):
            pos += 1
        elif pos < len(text):
            raise PromptError(f"unexpected text after tool call {name}: {text[pos:pos + 40]!r}")
    return calls


def case_from_prompt(prompt: str) -> Case:
    """The (row, Turn) an LLM-judge prompt was rendered from, as far as the prompt shows it."""
    if not prompt.startswith(CONVERSATION):
        raise PromptError("not an LLM-judge prompt: it does not start with '## Conversation'")
    rubric_at = prompt.rfind(RUBRIC)
    answer_at = prompt.rfind(ANSWER, 0, rubric_at)
    tools_at = prompt.rfind("\n" + TOOLS, 0, answer_at)
    if min(rubric_at, answer_at, tools_at) < 0:
        raise PromptError("not an LLM-judge prompt: a section is missing")
    messages = _messages(prompt[len(CONVERSATION):tools_at])
    tools_text = prompt[tools_at + 1 + len(TOOLS):answer_at].removeprefix("\n")
    calls = _tool_calls(tools_text)
    answer = prompt[answer_at + len(ANSWER):rubric_at]
    rubric = prompt[rubric_at + len(RUBRIC):]
    users = [m.content for m in messages if m.role == "user"]
    # Built without validation: the prompt holds what the judge reads, not a whole dataset row.
    inputs = Inputs.model_construct(message=None if len(users) > 1 else (users or [""])[0],
                                    turns=users if len(users) > 1 else None,
                                    expect=Expect.model_construct(rubric=rubric))
    row = Row.model_construct(id="judged-over-http", inputs=inputs, expected_output=rubric)
    turn = Turn(version="unknown", model="unknown", answer=answer, messages=messages, tool_calls=calls)
    return Case(row, turn)


async def judge_reply(prompt: str) -> str:
    """The verdict as the LLM judge asks for it: JSON with `pass` and `reason`."""
    from turngate.scoring.judges import make_judge

    passed, reason = await make_judge("offline")(case_from_prompt(prompt))
    return json.dumps({"pass": bool(passed), "reason": reason})
