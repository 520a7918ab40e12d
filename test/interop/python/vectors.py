"""Reads payloads and claims TypeScript wrote, and writes some for TypeScript to read, through
the data converter of interop/python/compactor_payloads.py. Run by
test/interop/python-payloads.test.ts:

    python vectors.py < job.json > report.json

job: {"env": {COMPACTOR_* settings}, "read": [{"name", "payload": base64 protobuf}], "write": {name: JSON value}}
report: {"read": [{"name", "ok", "value" | "class", "message"}], "written": {name: base64 protobuf}}
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys

import compactor_payloads
from temporalio.api.common.v1 import Payload


async def main() -> None:
    job = json.load(sys.stdin)
    converter = compactor_payloads.data_converter_from_env(job["env"])
    report: dict = {"read": [], "written": {}}
    for vector in job["read"]:
        payload = Payload.FromString(base64.b64decode(vector["payload"]))
        try:
            [value] = await converter.decode([payload])
            report["read"].append({"name": vector["name"], "ok": True, "value": value})
        except Exception as error:  # the report says which error each vector met
            report["read"].append({"name": vector["name"], "ok": False, "class": type(error).__name__, "message": str(error)})
    for name, value in job["write"].items():
        [payload] = await converter.encode([value])
        report["written"][name] = base64.b64encode(payload.SerializeToString(deterministic=True)).decode("ascii")
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
