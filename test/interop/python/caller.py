"""A Python workflow that calls temporal-compactor's compactConversation as a child workflow.

Run by test/interop/python-caller.test.ts with the venv of scripts/python-sdk.mjs:

    python caller.py < job.json > report.json

The job names the server, the TypeScript worker's task queue and the calls to make; the data
converter comes from the COMPACTOR_* environment (interop/python/compactor_payloads.py), the
same settings the TypeScript worker was built from. The report holds, per call, what the parent
workflow got back: the child's result, or the ApplicationError it failed with; and, per call, what a
client *without* the compactor's data converter makes of the child's result.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError, ChildWorkflowError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import compactor_payloads


@workflow.defn(name="pythonCompactionCaller")
class PythonCompactionCaller:
    """Starts compactConversation on the compactor's task queue and reports how it ended."""

    @workflow.run
    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await workflow.execute_child_workflow(
                "compactConversation",
                call["input"],
                id=call["childId"],
                task_queue=call["compactorTaskQueue"],
                result_type=dict,
                execution_timeout=timedelta(seconds=40),
            )
            return {"ok": True, "result": result}
        except ChildWorkflowError as error:
            cause = error.cause
            if not isinstance(cause, ApplicationError):
                raise
            return {
                "ok": False,
                "error": {
                    "class": type(cause).__name__,
                    "type": cause.type,
                    "message": cause.message,
                    "nonRetryable": cause.non_retryable,
                    "details": list(cause.details),
                },
            }


async def read_without_converter(address: str, namespace: str, child_id: str) -> dict[str, Any]:
    """What a client with the SDK's default data converter gets from the child's result."""
    plain = await Client.connect(address, namespace=namespace)
    try:
        value = await plain.get_workflow_handle(child_id).result()
        return {"ok": True, "result": value}
    except Exception as error:  # the point is to report whatever it raises
        cause = error.__cause__
        return {
            "ok": False,
            "class": type(error).__name__,
            "message": str(error),
            "cause": None if cause is None else f"{type(cause).__name__}: {cause}",
        }


async def main() -> None:
    job = json.load(sys.stdin)
    started = time.monotonic()
    client = await Client.connect(
        job["address"], namespace=job["namespace"], data_converter=compactor_payloads.data_converter_from_env()
    )
    report: dict[str, Any] = {"calls": []}
    async with Worker(client, task_queue=job["pythonTaskQueue"], workflows=[PythonCompactionCaller]):
        for call in job["calls"]:
            outcome = await client.execute_workflow(
                PythonCompactionCaller.run,
                {"input": call["input"], "childId": call["childId"], "compactorTaskQueue": job["compactorTaskQueue"]},
                id=call["workflowId"],
                task_queue=job["pythonTaskQueue"],
                # A parent that cannot decode what it gets must end, not retry its task forever.
                execution_timeout=timedelta(seconds=45),
            )
            plain = await read_without_converter(job["address"], job["namespace"], call["childId"]) if outcome["ok"] else None
            report["calls"].append({"name": call["name"], "outcome": outcome, "withoutConverter": plain})
    report["seconds"] = round(time.monotonic() - started, 2)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
    # The report is out: leave without interpreter teardown, where the SDK's client threads can
    # abort the process now and then ("PyGILState_Release ... finalizing", temporalio/sdk-python#300)
    # and turn a finished run into a failed test.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
