"""Decodes hostile payloads through the data converter of interop/python/compactor_payloads.py and
reports, for each, the error it ended in and the most memory Python allocated meanwhile
(tracemalloc's peak: zlib's output and every bytes object are Python allocations). Then decodes
one good payload, to show nothing else stopped. Run by test/security/python-bombs.test.ts:

    python bombs.py < job.json > report.json

job: {"env": {COMPACTOR_* settings}, "read": [{"name", "payload": base64 protobuf}], "good": base64 protobuf}
report: {"read": [{"name", "class", "message", "peak"}], "good": JSON value}
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import tracemalloc

import compactor_payloads
from temporalio.api.common.v1 import Payload


async def main() -> None:
    job = json.load(sys.stdin)
    converter = compactor_payloads.data_converter_from_env(job["env"])
    report: dict = {"read": [], "good": None}
    for vector in job["read"]:
        payload = Payload.FromString(base64.b64decode(vector["payload"]))
        tracemalloc.start()
        try:
            await converter.decode([payload])
            outcome = {"class": None, "message": "decoded"}
        except Exception as error:  # the report says which error each vector met
            outcome = {"class": type(error).__name__, "message": str(error)}
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        report["read"].append({"name": vector["name"], **outcome, "peak": peak})
    [value] = await converter.decode([Payload.FromString(base64.b64decode(job["good"]))])
    report["good"] = value
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
