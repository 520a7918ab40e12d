"""The shapes a Python caller sends to and gets back from our workflows, as TypedDicts.

compactConversation: its input (``CompactConversationInput``) and result (``CompactionResult``);
agentRun: the ``compaction`` options of its input (``AgentCompactionOptions``). The names are the
workflows' own JSON field names (camelCase), so a dict built with them is the payload as sent. The
JSON Schemas in docs/ (``compact-conversation.input.schema.json``, ``...result.schema.json``) are
the full contract; test/interop/python-types.test.ts keeps these keys equal to them.

    from compactor_types import CompactConversationInput
    request: CompactConversationInput = {
        "messages": messages,
        "options": {"contextBudget": 128_000, "keepUserMessages": True},
    }
"""

from __future__ import annotations

from typing import Any, Dict, Literal, TypedDict, Union

Duration = Union[int, float, str]
"""Milliseconds, or a string such as "2s", "500ms", "5m", "1h"."""


class _CompactionOptionsBase(TypedDict):
    contextBudget: int


class CompactionOptions(_CompactionOptionsBase, total=False):
    """The compaction options (docs/compaction.md#options); every one but contextBudget has a default."""

    triggerRatio: float
    targetRatio: float
    keepRecent: int
    keepTask: bool
    """Keep the first user message (the task) as if sticky (docs/compaction.md#defaults)."""
    toolResultCap: int
    ageObservations: bool
    ageMinChars: int
    ageReclaimMin: int
    keepImages: int
    maxAttempts: int
    retryBackoff: Duration
    recentWindowGivesWay: bool
    truncateOversized: bool
    elisionEndsPass: Literal["under-trigger", "at-mark", "never"]
    elisionEpochs: Literal["batch", "paying", "never"]
    deferShallowCompactions: bool
    stubsShorterOnly: bool
    trimBeatsOverflow: bool
    cachedInputPrice: float
    summaryCoverage: Literal["retry", "carry", "off"]
    summaryInstructions: str
    summaryPrompt: str
    summaryTokenCap: bool
    summarizerContextWindow: int
    keepUserMessages: bool
    """Keep the middle's user messages verbatim, the newest first (docs/design.md#user-words)."""
    keepUserMessagesShare: float
    """The share of the budget the kept user messages may take together (default 0.15)."""


class CompactConversationOptions(CompactionOptions, total=False):
    """compactConversation's options: the compaction options, the call's target, the activity settings, the format."""

    target: int
    startToCloseTimeout: Duration
    heartbeatTimeout: Duration
    taskQueue: str
    summarizerModel: str
    maxPayloadBytes: int
    payloadStore: bool
    format: Literal["openai", "anthropic", "ai-sdk"]


class _CompactConversationInputBase(TypedDict):
    messages: list[dict[str, Any]]
    options: CompactConversationOptions


class CompactConversationInput(_CompactConversationInputBase, total=False):
    system: Any
    """An Anthropic request's system prompt (only with format "anthropic")."""


class UserMessagesKept(TypedDict):
    kept: int
    summarized: int
    keptAt: list[int]


class _CompactionResultBase(TypedDict):
    messages: list[dict[str, Any]]
    dropped: int
    tokensBefore: int
    tokensAfter: int
    fallback: bool
    exhausted: bool
    elisions: list[dict[str, Any]]
    summary: Union[str, None]
    cutIndex: int


class CompactionResult(_CompactionResultBase, total=False):
    """compactConversation's result (docs/compaction.md#the-result)."""

    truncations: list[dict[str, Any]]
    aboveMark: dict[str, Any]
    coverage: dict[str, Any]
    summaryPieces: int
    trimMarker: str
    fallbackReason: dict[str, str]
    """With every hard trim: cause and message (docs/compaction.md#the-result)."""
    userMessages: UserMessagesKept
    """With keepUserMessages: how many user messages were kept verbatim and summarized."""


class AgentCompactionOptions(TypedDict, total=False):
    """agentRun's input.compaction (docs/agent-runs.md#input): the compaction options and the run's own."""

    contextBudget: int
    triggerRatio: float
    targetRatio: float
    keepRecent: int
    toolResultCap: int
    ageObservations: bool
    ageMinChars: int
    ageReclaimMin: int
    keepImages: int
    maxAttempts: int
    retryBackoff: Duration
    recentWindowGivesWay: bool
    truncateOversized: bool
    elisionEndsPass: Literal["under-trigger", "at-mark", "never"]
    elisionEpochs: Literal["batch", "paying", "never"]
    deferShallowCompactions: bool
    stubsShorterOnly: bool
    trimBeatsOverflow: bool
    cachedInputPrice: float
    summaryCoverage: Literal["retry", "carry", "off"]
    summaryInstructions: str
    summaryPrompt: str
    summaryTokenCap: bool
    summarizerContextWindow: int
    keepUserMessages: bool
    keepUserMessagesShare: float
    startToCloseTimeout: Duration
    heartbeatTimeout: Duration
    taskQueue: str
    summarizerModel: str
    review: Literal["auto", "approve", "manual"]
    reviewTimeout: Duration
    recall: bool
    cacheTtl: Union[Duration, Literal["off"]]
    """The provider's cache lifetime (default per provider: "5m"); "off": no cold-cache rule (docs/design.md#cold-cache)."""
    coldTrigger: float
    """The trigger after a pause longer than cacheTtl (default 0.7)."""
    agentTool: Union[bool, Dict[str, int]]
    """Declare compact_context to the model; a dict holds the bounds (agent_run.AgentToolOptions: cooldownRounds, minReclaim)."""
