"""Types and names a Python caller of temporal-compactor's ``agentRun`` uses (docs/other-languages.md).

Plain ``TypedDict``s and constants, no dependency: the update and failure names, the argument of
``undoCompaction`` and the details of its refusal, the undo record, and the agent's compaction tool
option (``compaction.agentTool``). The TypeScript definitions are the reference
(``src/shared/agent-run.ts``, ``src/core/errors.ts``, ``src/core/agent/agent-tool.ts``);
``test/interop/python-types.test.ts`` holds these to them.

    from temporalio.client import WorkflowUpdateFailedError
    import agent_run

    try:
        record = await handle.execute_update(agent_run.UNDO_COMPACTION_UPDATE, agent_run.UndoCompactionInput(compactionId=3))
    except WorkflowUpdateFailedError as error:
        if error.cause.type == agent_run.UNDO_REFUSED:
            details: agent_run.UndoRefusedDetails = error.cause.details[0]
            print(details["reason"])
"""

from typing import List, Literal, Optional, TypedDict, Union

# The update that undoes a compaction (docs/design.md#undo), and the failure type of a refusal.
UNDO_COMPACTION_UPDATE = "undoCompaction"
UNDO_REFUSED = "Compaction.UndoRefused"
# Why an undo is refused.
UndoRefusal = Literal["window", "later-compactions", "undone", "none", "transcript"]
UNDO_REFUSALS = ("window", "later-compactions", "undone", "none", "transcript")

# The agent's own compaction tool (docs/design.md#agent-tool): a reserved tool name.
COMPACT_CONTEXT_TOOL = "compact_context"


class UndoCompactionInput(TypedDict, total=False):
    """The argument of ``undoCompaction``: the ``#`` of the compaction (default: the last in effect)."""

    compactionId: int


class UndoRefusedDetails(TypedDict, total=False):
    """``details[0]`` of a ``Compaction.UndoRefused`` failure."""

    reason: UndoRefusal
    compactionId: Optional[int]
    later: List[int]
    tokens: int
    room: int


class CompactionRecord(TypedDict, total=False):
    """One record of an agent run's compaction history; an undo has ``kind: 'undo'``, ``undoes`` and ``restored``."""

    round: int
    backend: str
    target: int
    tokensBefore: int
    tokensAfter: int
    dropped: int
    elided: int
    kind: Literal["summary", "trim", "elision", "none", "undo"]
    undoes: int
    restored: int
    summaryChars: Optional[int]
    fallback: bool
    exhausted: bool
    tokensReclaimed: int


class AgentToolOptions(TypedDict, total=False):
    """``compaction.agentTool`` in full (``True`` is the defaults): the cooldown in rounds and the minimum reclaim in tokens."""

    cooldownRounds: int
    minReclaim: int


AgentTool = Union[bool, AgentToolOptions]
