"""Reads every claim of a store an earlier (or this) version of the TypeScript driver wrote, with
interop/python/compactor_payloads.py's driver, and reports each payload's size and SHA-256. Run by
test/interop/python-payloads.test.ts:

    python read-store.py < job.json > report.json

job: {"directory": store directory, "key": {"id", "hex"} | null, "claims": [claim data]}
report: [{"size", "sha256", "metadata": {name: base64}} | {"class", "message"}]
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys

import compactor_payloads
from temporalio.converter import StorageDriverClaim


def main() -> None:
    job = json.load(sys.stdin)
    keyring = None
    if job["key"] is not None:
        key = compactor_payloads.CodecKey.from_raw(bytes.fromhex(job["key"]["hex"]), job["key"]["id"])
        keyring = compactor_payloads.Keyring(current=key, by_id={key.id: key})
    driver = compactor_payloads.ChunkStoreDriver(compactor_payloads.FileBackend(job["directory"]), keyring)
    report = []
    for claim_data in job["claims"]:
        try:
            payload = driver._retrieve_one(StorageDriverClaim(claim_data=claim_data))
            report.append({
                "size": len(payload.data),
                "sha256": hashlib.sha256(payload.data).hexdigest(),
                "metadata": {name: base64.b64encode(value).decode("ascii") for name, value in payload.metadata.items()},
            })
        except Exception as error:  # the report says which error each claim met
            report.append({"class": type(error).__name__, "message": str(error)})
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
