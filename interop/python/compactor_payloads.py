"""temporal-compactor's payload codec and chunk store, for Python callers (temporalio).

A worker of temporal-compactor with a payload store or a codec key writes the payloads of its
workflows in two formats of its own (docs/other-languages.md and docs/payloads.md, "The byte formats"):

- ``binary/compactor`` payloads: the original payload's protobuf bytes, raw-deflated, and with a
  key sealed with AES-256-GCM. ``PayloadCodec`` below reads and writes them.
- External Storage claims of the ``compactor-chunks`` driver: the payload in a content-addressed
  store (a directory or an S3 prefix), a claim in history: ``{m, k?}``, the manifest id in
  base64url and the key id. ``ChunkStoreDriver`` below reads what the TypeScript driver writes
  (manifests on base manifests, tree nodes, packs, slices of other manifests' inline bytes,
  objects deflated against the objects written before them), and writes each payload as one
  manifest holding its bytes inline (the TypeScript writer cuts at JSON boundaries to dedup, a
  reader does not care how a payload was cut).

A Python client or workflow that calls ``compactConversation`` on such a worker needs both, with
the same settings as the worker: ``data_converter_from_env()`` builds them from the same
environment variables the TypeScript side reads (``COMPACTOR_PAYLOAD_STORE``,
``COMPACTOR_PAYLOAD_THRESHOLD``, ``COMPACTOR_CODEC_KEY``, ``COMPACTOR_CODEC_KEY_ID``,
``COMPACTOR_CODEC_OLD_KEYS``). With none of them set the worker writes plain JSON and nothing
here is needed.

Needs ``temporalio`` (External Storage: 1.35 or newer) and ``cryptography``. Stores: ``file:``
directories; for S3 (or anything else) pass an ``ObjectBackend`` (``get`` and ``put`` over the same
keys) as the backend. On S3, its ``get`` should look for a missing ``v1/...`` key under
``quarantine/v1/...`` too: gc keeps what it removed there for one grace period.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    PayloadCodec,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

CODEC_ENCODING = b"binary/compactor"
"""``encoding`` of a payload the codec wrote."""
CODEC_METADATA_KEY = "compactor"
"""Metadata entry saying how: ``deflate;size=<N>`` (N: the decoded size) or ``none``, then ``;key=<id>`` when encrypted."""
MAX_CODEC_PAYLOAD_BYTES = 4 * 1024 * 1024
"""The most a codec payload may state (or inflate to): src/payloads/codec.ts, ``MAX_CODEC_PAYLOAD_BYTES``."""
DRIVER_NAME = "compactor-chunks"
"""The External Storage driver name in every claim the store writes."""
DRIVER_TYPE = "temporal-compactor.chunk-store"
DEFAULT_THRESHOLD = 256
"""``COMPACTOR_PAYLOAD_THRESHOLD``'s default: payloads of this many bytes and more go to the store."""

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# Below this deflate's framing eats the gain (the TypeScript codec's rule, kept so both write alike).
MIN_COMPRESS_BYTES = 64
PLAIN_BELOW = 512
# A claim's ``m``: 32 bytes in base64url without padding.
CLAIM_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{43}$")
OBJECT_MAGIC = b"cps\x01"
# A sealed object's flags. Deflated: the body starts with the number of a preset dictionary, then
# with a context its depth (1 byte) and id (32 bytes); the rest is raw deflate, against the
# context's window or else the preset dictionary. A context's window is the last 32 KiB of its own
# context's window (without one: preset dictionary 1) followed by its plaintext.
FLAG_DEFLATE = 1
FLAG_ENCRYPTED = 2
FLAG_CONTEXT = 4
FLAG_CONTEXT_MANIFEST = 8
KNOWN_FLAGS = 15
WINDOW_BYTES = 32 * 1024
MAX_CONTEXT_DEPTH = 64
CONTEXT_ID_PREFIX = b"temporal-compactor context chunk\x00"
MANIFEST_CONTEXT_ID_PREFIX = b"temporal-compactor context manifest\x00"
# The preset dictionaries objects are deflated with (src/payloads/dictionary.ts, the same bytes: a
# test compares them).
PRESET_DICTIONARIES = {
    1: base64.b64decode(
        "SSdsbCBzdGFydCBieSBleHBsb3JpbmcgdGhlIHJlcG9zaXRvcnkgc3RydWN0dXJlIHRvIHVuZGVyc3RhbmQgdGhlIGNvZGViYXNl"
        "LiBMZXQgbWUgbG9vayBhdCB0aGUgcmVsZXZhbnQgZmlsZXMgZmlyc3QuIE5vdyBJIHVuZGVyc3RhbmQgdGhlIGlzc3VlLiBUaGUg"
        "cHJvYmxlbSBpcyB0aGF0IHRoZSBmdW5jdGlvbiBkb2VzIG5vdCBoYW5kbGUgdGhlIGNhc2Ugd2hlcmUgdGhlIHZhbHVlIGlzIE5v"
        "bmUuIExldCBtZSBjaGVjayB0aGUgaW1wbGVtZW50YXRpb24gb2YgdGhpcyBtZXRob2QgYW5kIHNlZSBob3cgaXQgaXMgdXNlZCBl"
        "bHNld2hlcmUuIEkgbmVlZCB0byBmaW5kIHdoZXJlIHRoaXMgaXMgZGVmaW5lZC4gTGV0IG1lIHNlYXJjaCBmb3IgaXQuIE5vdyBs"
        "ZXQncyBydW4gdGhlIHRlc3RzIHRvIG1ha2Ugc3VyZSB0aGUgZml4IHdvcmtzIGFuZCBub3RoaW5nIGVsc2UgaXMgYnJva2VuLiBB"
        "bGwgdGVzdHMgcGFzcy4gVGhlIGZpeCBpcyBjb21wbGV0ZS4gTGV0IG1lIGNyZWF0ZSBhIHNjcmlwdCB0byByZXByb2R1Y2UgdGhl"
        "IGVycm9yLiBMZXQgbWUgdmlldyB0aGUgZmlsZSB0byBzZWUgdGhlIGN1cnJlbnQgY29kZS4gSSBzZWUgdGhlIGlzc3VlIG5vdy4g"
        "VGhpcyBzaG91bGQgZml4IHRoZSBwcm9ibGVtLiBMZXQgbWUgdmVyaWZ5IHRoZSBjaGFuZ2UgYnkgcnVubmluZyB0aGUgdGVzdCBz"
        "dWl0ZSBhZ2Fpbi4KIyMgU3VtbWFyeQoKVGhlIGlzc3VlIHdhcyBjYXVzZWQgYnkgIyMgR29hbHMKLSAjIyBEZWNpc2lvbnMKLSAj"
        "IyBGaWxlcwotICMjIE5leHQgc3RlcHMKLSBbb2JzZXJ2YXRpb24gYWdlZDogIGNoYXJzIGVsaWRlZF1FeGl0IGNvZGUgMQpFeGl0"
        "IGNvZGUgMApPbiBicmFuY2ggbWFpbgpDaGFuZ2VzIG5vdCBzdGFnZWQgZm9yIGNvbW1pdDoKICAodXNlICJnaXQgYWRkIDxmaWxl"
        "Pi4uLiIgdG8gdXBkYXRlIHdoYXQgd2lsbCBiZSBjb21taXR0ZWQpCgltb2RpZmllZDogICBVbnRyYWNrZWQgZmlsZXM6Cm5vIGNo"
        "YW5nZXMgYWRkZWQgdG8gY29tbWl0bnBtIEVSUiEgU3VjY2Vzc2Z1bGx5IGluc3RhbGxlZCBSZXF1aXJlbWVudCBhbHJlYWR5IHNh"
        "dGlzZmllZDogIGluIC91c3IvbGliL3B5dGhvbjMvZGlzdC1wYWNrYWdlcyAoZnJvbSBSYW4gMSB0ZXN0IGluIDAuMDAxcwoKT0sK"
        "RkFJTEVEIChmYWlsdXJlcz0xKUZBSUw6IHRlc3RfRVJST1I6IHRlc3Rfc2VsZi5hc3NlcnRFcXVhbChhc3NlcnQgcHl0ZXN0cHl0"
        "aG9uIC1tIHB5dGVzdCBweXRob24zIC1jICJncmVwIC1ybiAiZmluZCAuIC1uYW1lICIqLnB5IiB8IHhhcmdzIGdyZXAgLWwgInNl"
        "ZCAtbiAnY2F0IC1uIGxzIC1sYSBjZCAvd29ya3NwYWNlICYmICAgICBkZWYgdGVzdF8oc2VsZik6CiAgICAgICAgIiIiIiIiCnJl"
        "dHVybiBzZWxmLmlzaW5zdGFuY2UobGVuKHJhaXNlIFZhbHVlRXJyb3Ioa3dhcmdzYXJnc3NlbGYgICAgfQogIH0KfSk7Cj0+IHsK"
        "VHJhY2ViYWNrIChtb3N0IHJlY2VudCBjYWxsIGxhc3QpOgogIEZpbGUgIiIsIGxpbmUgLCBpbiA8bW9kdWxlPgpBc3NlcnRpb25F"
        "cnJvclR5cGVFcnJvcjogVmFsdWVFcnJvcjogS2V5RXJyb3I6IEF0dHJpYnV0ZUVycm9yOiBJbXBvcnRFcnJvcjogY2Fubm90IGlt"
        "cG9ydCBuYW1lIE1vZHVsZU5vdEZvdW5kRXJyb3I6IE5vIG1vZHVsZSBuYW1lZCBTeW50YXhFcnJvcjogaW52YWxpZCBzeW50YXhG"
        "QUlMRUQgUEFTU0VEIHBhc3NlZCwgIGZhaWxlZCwgIHdhcm5pbmdzIGluID09PT09PT09PT09PT09PT09PT09PSB0ZXN0IHNlc3Np"
        "b24gc3RhcnRzID09PT09PT09PT09PT09PT09PT09PT0KcGxhdGZvcm0gbGludXggLS0gUHl0aG9uIDMuY29sbGVjdGVkICBpdGVt"
        "cwoKZXJyb3I6IHdhcm5pbmc6IE5vIHN1Y2ggZmlsZSBvciBkaXJlY3RvcnlQZXJtaXNzaW9uIGRlbmllZGNvbW1hbmQgbm90IGZv"
        "dW5kZGlmZiAtLWdpdCBhLyBiL2luZGV4IC0tLSBhLysrKyBiL0BAIC0gQEAKaW1wb3J0IG9zCmltcG9ydCBzeXMKaW1wb3J0IGpz"
        "b24KaW1wb3J0IHJlCmZyb20gdHlwaW5nIGltcG9ydCBmcm9tIF9fZnV0dXJlX18gaW1wb3J0IGFubm90YXRpb25zCmRlZiBfX2lu"
        "aXRfXyhzZWxmLCAgICAgZGVmIChzZWxmKToKICAgICAgICAgICAgICAgIHJldHVybiAgICAgICAgIHNlbGYuICAgICAgICBpZiAg"
        "aXMgTm9uZToKIGlzIG5vdCBOb25lICAgIHJhaXNlIGNsYXNzIChvYmplY3QpOgp0cnk6CmV4Y2VwdCBFeGNlcHRpb24gYXMgZToK"
        "Zm9yIGkgaW4gcmFuZ2UocHJpbnQoZiJpZiBfX25hbWVfXyA9PSAiX19tYWluX18iOgogICAgbWFpbigpCmV4cG9ydCBmdW5jdGlv"
        "biBleHBvcnQgY29uc3QgaW1wb3J0IHsgIH0gZnJvbSAnY29uc3QgcmV0dXJuIGZ1bmN0aW9uIGFzeW5jIGF3YWl0IHVuZGVmaW5l"
        "ZG51bGx0cnVlZmFsc2V0b3RhbCBkcnd4ci14ci14IC1ydy1yLS1yLS0gIHJvb3Qgcm9vdCBSRUFETUUubWRwYWNrYWdlLmpzb25z"
        "ZXR1cC5weXJlcXVpcmVtZW50cy50eHR0ZXN0cy90ZXN0X3NyYy8ucHkudHMuanMuanNvbi5tZC93b3Jrc3BhY2UvL3Rlc3RiZWQv"
        "SGVyZSdzIHRoZSByZXN1bHQgb2YgcnVubmluZyBgY2F0IC1uYCBvbiBUaGUgZmlsZSAgaGFzIGJlZW4gZWRpdGVkLiBGaWxlIGNy"
        "ZWF0ZWQgc3VjY2Vzc2Z1bGx5IGF0OiBPQlNFUlZBVElPTjoKTGV0IG1lIE5vdyBsZXQgbWUgSSdsbCB0aGUgIHRoZSAgYW5kICB0"
        "byAgb2YgIGluICB0aGF0ICBpcyAgZm9yICB3aXRoICB0aGlzICBmaWxlIHRlc3QgZnVuY3Rpb24gZXJyb3IgaXNzdWVlbmNvZGlu"
        "Z2pzb24vcGxhaW5iaW5hcnkvcGxhaW5qc29uL3Byb3RvYnVmbWVzc2FnZVR5cGV7InR5cGUiOiJvYmplY3QiLCJwcm9wZXJ0aWVz"
        "Ijp7InJlcXVpcmVkIjpbImRlc2NyaXB0aW9uIjoiInBhcmFtZXRlcnMiOnsidHlwZSI6ImZ1bmN0aW9uIiwiZnVuY3Rpb24iOnsi"
        "bmFtZSI6IiJ0b29scyI6WyJ0dXJuIjoiaW5zdHJ1Y3Rpb24iOiIidGV4dCI6IiJzdW1tYXJ5IjoiInVzYWdlIjp7InByb21wdFRv"
        "a2VucyI6LCJjb21wbGV0aW9uVG9rZW5zIjp9LCJmaW5pc2hSZWFzb24iOiJzdG9wIn19LCJmaW5pc2hSZWFzb24iOiJ0b29sX2Nh"
        "bGxzIn0iYmFja2VuZCI6eyJwcm92aWRlciI6IiIsInRyYWplY3RvcnkiOiIiLCJjb250ZXh0V2luZG93IjosIm1heE91dHB1dFRv"
        "a2VucyI6eyJmcm9tIjowLCJsaW5lcyI6W3sidHlwZSI6Im1lc3NhZ2UiLCJpZCI6Im0iLCJtZXNzYWdlIjosInN0aWNreSI6dHJ1"
        "ZX0ibmFtZSI6IiJpbnB1dCI6Im91dHB1dCI6InJlc3VsdCI6ImVycm9yIjoicGF0aCI6IiJmaWxlX3BhdGgiOiIib2xkX3N0ciI6"
        "IiJuZXdfc3RyIjoiInZpZXdfcmFuZ2UiOltcImNvbW1hbmRcIjogXCJcIiwgXCJkZXNjcmlwdGlvblwiOiBcIiJhcmd1bWVudHMi"
        "OiJ7XCJjb21tYW5kXCI6XCIiYXJndW1lbnRzIjoie1wiXFxuXG5cIiJ0b29sX2NhbGxfaWQiOiJjYWxsXyJ0b29sX2NhbGxfaWQi"
        "OiJ0b29sdV8wMXsicm9sZSI6InN5c3RlbSIsImNvbnRlbnQiOiJ7InJvbGUiOiJ1c2VyIiwiY29udGVudCI6Insicm9sZSI6InRv"
        "b2wiLCJjb250ZW50IjoiInRvb2xfY2FsbHMiOlt7ImlkIjoidG9vbHVfMDEidG9vbF9jYWxscyI6W3siaWQiOiJjYWxsXyIsInR5"
        "cGUiOiJmdW5jdGlvbiIsImZ1bmN0aW9uIjp7Im5hbWUiOiIiLCJhcmd1bWVudHMiOiIifX1dfXsibWVzc2FnZSI6eyJyb2xlIjoi"
        "YXNzaXN0YW50IiwiY29udGVudCI6Insicm9sZSI6ImFzc2lzdGFudCIsImNvbnRlbnQiOiJ7Im1lc3NhZ2VzIjpb"
    )
}
CURRENT_DICTIONARY = 1
MANIFEST_MAGIC = b"ctm\x01"
NODE_MAGIC = 0x4E
MAX_MANIFEST_DEPTH = 16
MAX_INLINE_BYTES = 0xFFFF
# The store's bounds (src/payloads/object-format.ts): the largest payload, the largest plaintext of
# an object (a manifest holding a whole payload), the largest sealed object.
MAX_STORED_PAYLOAD_BYTES = 64 * 1024 * 1024
MAX_OBJECT_BYTES = MAX_STORED_PAYLOAD_BYTES + 1024 * 1024
MAX_SEALED_OBJECT_BYTES = MAX_OBJECT_BYTES + 64 * 1024


class PayloadDecodeError(Exception):
    """A ``binary/compactor`` payload is malformed, altered, or sealed under another key."""


class PayloadTooLargeError(Exception):
    """A payload is larger than the format carries (the codec's or the store's bound); raised where it is written."""


class PayloadKeyMissingError(Exception):
    """A payload or stored object was encrypted with a key id that is not configured."""

    def __init__(self, key_id: str, what: str) -> None:
        super().__init__(
            f"{what} was encrypted with key id {json.dumps(key_id)}, which is not configured "
            "(set it in COMPACTOR_CODEC_KEY or COMPACTOR_CODEC_OLD_KEYS)"
        )
        self.key_id = key_id


class ChunkIntegrityError(Exception):
    """A stored object does not hash to its name, fails authentication, or is malformed."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"payload store object {key}: {reason}")
        self.key = key


class ChunkMissingError(Exception):
    """An object a claim needs is not in the store."""

    def __init__(self, key: str, store: str) -> None:
        super().__init__(f"payload store object {key} is missing from {store} (deleted, or another store is configured)")
        self.key = key


def _derive(raw: bytes, purpose: str) -> bytes:
    # One random key, three independent uses: the same HKDF parameters as src/payloads/keyring.ts.
    return HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_BYTES,
        salt=b"temporal-compactor",
        info=f"temporal-compactor {purpose} v1".encode(),
    ).derive(raw)


def default_key_id(raw: bytes) -> str:
    """``k-`` and 8 hex digits of a hash of the key: the id every process derives alike."""
    return "k-" + hashlib.sha256(b"temporal-compactor key id" + raw).hexdigest()[:8]


@dataclass(frozen=True)
class CodecKey:
    """One 256-bit key, its id, and the sub-keys derived from it."""

    id: str
    codec_key: bytes
    chunk_key: bytes
    chunk_mac_key: bytes
    chunk_nonce_key: bytes

    @staticmethod
    def from_raw(raw: bytes, key_id: str | None = None) -> CodecKey:
        if len(raw) != KEY_BYTES:
            raise ValueError(f"an AES-256 key has {KEY_BYTES} bytes, got {len(raw)}")
        key_id = default_key_id(raw) if key_id is None else key_id
        if not KEY_ID_PATTERN.match(key_id):
            raise ValueError(f"key id {json.dumps(key_id)} must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
        return CodecKey(
            id=key_id,
            codec_key=_derive(raw, "payload codec"),
            chunk_key=_derive(raw, "chunk encryption"),
            chunk_mac_key=_derive(raw, "chunk id"),
            chunk_nonce_key=_derive(raw, "chunk nonce"),
        )


@dataclass(frozen=True)
class Keyring:
    """``current`` encrypts; every key, found by id, decrypts."""

    current: CodecKey
    by_id: Mapping[str, CodecKey]


def _decode_key(text: str, setting: str) -> bytes:
    trimmed = text.strip()
    try:
        if not re.match(r"^[A-Za-z0-9+/_-]+={0,2}$", trimmed):
            raise ValueError
        raw = base64.b64decode(trimmed.replace("-", "+").replace("_", "/") + "=" * (-len(trimmed) % 4))
    except ValueError:
        raw = b""
    if len(raw) != KEY_BYTES:
        raise ValueError(f"{setting}: expected base64 of exactly {KEY_BYTES} random bytes, e.g. from `openssl rand -base64 32`")
    return raw


def keyring_from_env(env: Mapping[str, str] = os.environ) -> Keyring | None:
    """The keyring of ``COMPACTOR_CODEC_KEY`` (+ ``_KEY_ID``, ``_OLD_KEYS``), or None without a key."""
    key = env.get("COMPACTOR_CODEC_KEY", "").strip()
    if key == "":
        return None
    key_id = env.get("COMPACTOR_CODEC_KEY_ID", "").strip() or None
    current = CodecKey.from_raw(_decode_key(key, "COMPACTOR_CODEC_KEY"), key_id)
    by_id = {current.id: current}
    entries = [entry.strip() for entry in env.get("COMPACTOR_CODEC_OLD_KEYS", "").split(",") if entry.strip()]
    for index, entry in enumerate(entries):
        old_id, _, old_key = entry.rpartition(":") if ":" in entry else ("", "", entry)
        old = CodecKey.from_raw(_decode_key(old_key, f"COMPACTOR_CODEC_OLD_KEYS entry {index + 1}"), old_id.strip() or None)
        known = by_id.get(old.id)
        if known is not None and known.codec_key != old.codec_key:
            # One id for two keys would make decoding pick either: refuse, as the TypeScript side does.
            raise ValueError(f"COMPACTOR_CODEC_OLD_KEYS: entry {index + 1} reuses the id {json.dumps(old.id)} for another key")
        by_id.setdefault(old.id, old)
    return Keyring(current=current, by_id=by_id)


def _codec_aad(compression: str, key_id: str) -> bytes:
    # Binds what steers decoding (compression with its stated size, key id) to the ciphertext.
    return f"temporal-compactor codec v1\x00{compression}\x00{key_id}".encode()


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def _inflate_stated(data: bytes, size: int, zdict: bytes | None, refuse: Callable[[str], Exception]) -> bytes:
    """Raw inflate of ``data``, which states that it inflates to ``size`` bytes: zlib stops one byte
    past ``size``, so a bomb costs no more than it states. ``refuse(reason)`` makes the error."""
    try:
        inflater = zlib.decompressobj(-15) if zdict is None else zlib.decompressobj(-15, zdict=zdict)
        out = inflater.decompress(data, size + 1)
    except zlib.error as error:
        raise refuse("does not inflate (corrupted)") from error
    if len(out) > size or inflater.unconsumed_tail:
        raise refuse(f"inflates to more than the {size} bytes it states")
    if not inflater.eof:
        raise refuse("does not inflate (corrupted: the stream is truncated)")
    if len(out) != size:
        raise refuse(f"inflates to {len(out)} bytes where it states {size}")
    return out


class CompactorCodec(PayloadCodec):
    """The ``binary/compactor`` codec: deflate, and AES-256-GCM with a keyring.

    ``pass_through_at_or_above``: leave payloads of that many bytes and more alone, because the
    store takes them (set it to the store's threshold, and only with the store configured).
    Decoding passes every other encoding through.
    """

    def __init__(self, keyring: Keyring | None = None, pass_through_at_or_above: int | None = None) -> None:
        self.keyring = keyring
        self.pass_through_at_or_above = pass_through_at_or_above

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encode_one(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decode_one(payload) for payload in payloads]

    def encode_one(self, payload: Payload) -> Payload:
        size = payload.ByteSize()
        if self.pass_through_at_or_above is not None and size >= self.pass_through_at_or_above:
            return payload
        if self.keyring is None and size < PLAIN_BELOW:
            return payload
        if size > MAX_CODEC_PAYLOAD_BYTES:
            if self.keyring is None:
                return payload
            raise PayloadTooLargeError(
                f"a payload to encrypt inline is {size} bytes, more than the {MAX_CODEC_PAYLOAD_BYTES} it may have: "
                "no reader decodes more; configure a payload store (COMPACTOR_PAYLOAD_STORE)"
            )
        inner = payload.SerializeToString(deterministic=True)
        compressed = _deflate(inner) if len(inner) >= MIN_COMPRESS_BYTES else None
        use_compression = compressed is not None and len(compressed) < len(inner)
        compression = f"deflate;size={len(inner)}" if use_compression else "none"
        body = compressed if use_compression and compressed is not None else inner
        if self.keyring is None:
            if not use_compression:
                return payload
            return Payload(metadata={"encoding": CODEC_ENCODING, CODEC_METADATA_KEY: compression.encode()}, data=body)
        key = self.keyring.current
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = nonce + AESGCM(key.codec_key).encrypt(nonce, body, _codec_aad(compression, key.id))
        return Payload(
            metadata={"encoding": CODEC_ENCODING, CODEC_METADATA_KEY: f"{compression};key={key.id}".encode()},
            data=sealed,
        )

    def decode_one(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != CODEC_ENCODING:
            return payload
        description = payload.metadata.get(CODEC_METADATA_KEY, b"").decode("utf-8", "replace")
        match = re.fullmatch(r"(none|deflate;size=(0|[1-9][0-9]{0,9}))(?:;key=([A-Za-z0-9._-]{1,64}))?", description)
        if match is None:
            raise PayloadDecodeError(f"payload encoded by temporal-compactor has a malformed {json.dumps(CODEC_METADATA_KEY)} entry {json.dumps(description)}")
        compression, size_text, key_id = match.group(1), match.group(2), match.group(3)
        size = 0 if size_text is None else int(size_text)
        if size > MAX_CODEC_PAYLOAD_BYTES:
            raise PayloadDecodeError(f"payload encoded by temporal-compactor states {size} bytes decoded, more than the {MAX_CODEC_PAYLOAD_BYTES} a payload may have")
        body = payload.data
        if len(body) > MAX_CODEC_PAYLOAD_BYTES + NONCE_BYTES + TAG_BYTES:
            raise PayloadDecodeError(f"payload encoded by temporal-compactor is {len(body)} bytes, more than a payload of at most {MAX_CODEC_PAYLOAD_BYTES} bytes takes")
        if key_id is not None:
            key = None if self.keyring is None else self.keyring.by_id.get(key_id)
            if key is None:
                raise PayloadKeyMissingError(key_id, "a payload")
            if len(body) < NONCE_BYTES + TAG_BYTES:
                raise PayloadDecodeError(f"encrypted payload (key id {json.dumps(key_id)}) is truncated: {len(body)} bytes")
            try:
                body = AESGCM(key.codec_key).decrypt(body[:NONCE_BYTES], body[NONCE_BYTES:], _codec_aad(compression, key_id))
            except InvalidTag as error:
                raise PayloadDecodeError(
                    f"encrypted payload (key id {json.dumps(key_id)}) failed authentication: it was altered, "
                    "or the key configured under that id is not the one that encrypted it"
                ) from error
        inner = body
        if size_text is not None:
            inner = _inflate_stated(body, size, None, lambda reason: PayloadDecodeError(f"payload encoded by temporal-compactor {reason}"))
        decoded = Payload()
        try:
            decoded.ParseFromString(inner)
        except Exception as error:  # protobuf raises its own DecodeError
            raise PayloadDecodeError("payload encoded by temporal-compactor does not hold a payload: it is corrupted") from error
        return decoded


class ObjectBackend(Protocol):
    """Where the store's objects live: keys like ``v1/chunks/3f/a2/<id>``."""

    description: str

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, body: bytes) -> None: ...


class FileBackend:
    """``COMPACTOR_PAYLOAD_STORE=file:DIR``: one file per object, written atomically. What it creates
    is its owner's alone, created so: directories 0700, objects and temporary files 0600."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).resolve()
        self.description = f"file:{self.directory}"

    def _path(self, key: str) -> Path:
        path = self.directory.joinpath(*key.split("/"))
        if self.directory not in path.parents:
            raise ValueError(f"object key {json.dumps(key)} escapes the store directory")
        return path

    def get(self, key: str) -> bytes | None:
        try:
            handle = open(self._path(key), "rb")
        except FileNotFoundError:
            return None
        with handle:
            # Sized before it is read, from the file that was opened; never read past the bound.
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_SEALED_OBJECT_BYTES:
                raise ChunkIntegrityError(key, f"is {size} bytes, more than the {MAX_SEALED_OBJECT_BYTES} any object of the store takes")
            # A file that grew since it was sized is read no further: its hash will not match.
            return handle.read(size)

    def put(self, key: str, body: bytes) -> None:
        path = self._path(key)
        # One level at a time: mkdir(parents=True) and os.makedirs create the levels above the last
        # with the default mode.
        missing = [parent for parent in [path.parent, *path.parent.parents] if not parent.exists()]
        for directory in reversed(missing):
            try:
                directory.mkdir(mode=0o700)
            except FileExistsError:
                pass
        temporary = path.parent / f".tmp-{os.getpid()}-{secrets.token_hex(6)}"
        try:
            with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600), "wb") as handle:
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


def object_key(kind: str, object_id: str) -> str:
    """``v1/<kind>s/<id[0:2]>/<id[2:4]>/<id>``."""
    return f"v1/{kind}s/{object_id[0:2]}/{object_id[2:4]}/{object_id}"


def object_id(plaintext: bytes, key: CodecKey | None) -> str:
    """Content address: SHA-256, or with a key HMAC-SHA256 under its chunk-id key."""
    if key is None:
        return hashlib.sha256(plaintext).hexdigest()
    return hmac.new(key.chunk_mac_key, plaintext, hashlib.sha256).hexdigest()


def seal_object(plaintext: bytes, key: CodecKey | None) -> bytes:
    """``cps\\x01`` | flags | [key id length | key id | nonce] | body [| tag]: an object without a
    context, deflated with preset dictionary 1 when that makes it smaller; deterministic."""
    if len(plaintext) > MAX_OBJECT_BYTES:
        raise PayloadTooLargeError(f"an object of {len(plaintext)} bytes is more than the {MAX_OBJECT_BYTES} any object may have")
    compressed = None
    if len(plaintext) >= MIN_COMPRESS_BYTES:
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=PRESET_DICTIONARIES[CURRENT_DICTIONARY])
        compressed = bytes([CURRENT_DICTIONARY]) + len(plaintext).to_bytes(4, "big") + compressor.compress(plaintext) + compressor.flush()
    use_compression = compressed is not None and len(compressed) < len(plaintext)
    body = compressed if use_compression and compressed is not None else plaintext
    flags = (FLAG_DEFLATE if use_compression else 0) | (0 if key is None else FLAG_ENCRYPTED)
    if key is None:
        return OBJECT_MAGIC + bytes([flags]) + body
    key_id = key.id.encode("ascii")
    prefix = OBJECT_MAGIC + bytes([flags, len(key_id)]) + key_id
    # A keyed MAC of exactly what is authenticated and encrypted: the nonce repeats only with the whole object.
    nonce = hmac.new(key.chunk_nonce_key, prefix + body, hashlib.sha256).digest()[:NONCE_BYTES]
    header = prefix + nonce
    return header + AESGCM(key.chunk_key).encrypt(nonce, body, header)


def contextual_id(plaintext: bytes, context_id: str, key: CodecKey | None, context_kind: str) -> str:
    """The id of a chunk or manifest deflated against a context (a chunk or a manifest): it binds the context."""
    prefix = CONTEXT_ID_PREFIX if context_kind == "chunk" else MANIFEST_CONTEXT_ID_PREFIX
    return object_id(prefix + bytes.fromhex(context_id) + plaintext, key)


def open_object(sealed: bytes, kind: str, oid: str, key_name: str, expected_key_id: str | None, keyring: Keyring | None, context_window: Callable[[str, int, str], bytes]) -> tuple[bytes, bytes, int]:
    """Opens an object of ``kind`` fetched as ``oid`` and checks its header, tag and name. Returns its
    plaintext, its window (what an object deflated against it starts from) and its context depth (0:
    none). ``context_window(id, depth, kind)`` gives the window of the context it names (a "chunk"
    or a "manifest", at the depth it says)."""
    if len(sealed) < 5 or sealed[:4] != OBJECT_MAGIC:
        raise ChunkIntegrityError(key_name, "not a temporal-compactor object (bad header)")
    flags = sealed[4]
    if flags & ~KNOWN_FLAGS:
        raise ChunkIntegrityError(key_name, f"has header flags {flags} this version does not know")
    if flags & FLAG_CONTEXT_MANIFEST and not flags & FLAG_CONTEXT:
        raise ChunkIntegrityError(key_name, "says what its context is but names none (malformed header)")
    if flags & FLAG_CONTEXT and not flags & FLAG_DEFLATE:
        raise ChunkIntegrityError(key_name, "names a context but is not deflated (malformed header)")
    key_id: str | None = None
    if flags & FLAG_ENCRYPTED:
        length = sealed[5] if len(sealed) > 5 else 0
        if length == 0 or len(sealed) < 6 + length + NONCE_BYTES + TAG_BYTES:
            raise ChunkIntegrityError(key_name, "truncated header")
        key_id = sealed[6 : 6 + length].decode("ascii")
    if key_id != expected_key_id:
        sealed_as = "without encryption" if key_id is None else f"with key id {json.dumps(key_id)}"
        stored_as = "without encryption" if expected_key_id is None else f"with key id {json.dumps(expected_key_id)}"
        raise ChunkIntegrityError(key_name, f"sealed {sealed_as}, but its payload was stored {stored_as}")
    key: CodecKey | None = None
    if key_id is None:
        body = sealed[5:]
    else:
        key = None if keyring is None else keyring.by_id.get(key_id)
        if key is None:
            raise PayloadKeyMissingError(key_id, f"payload store object {key_name}")
        header_length = 6 + len(key_id) + NONCE_BYTES
        try:
            body = AESGCM(key.chunk_key).decrypt(sealed[header_length - NONCE_BYTES : header_length], sealed[header_length:], sealed[:header_length])
        except InvalidTag as error:
            raise ChunkIntegrityError(key_name, f"failed authentication under key id {json.dumps(key_id)} (altered, or another key was configured under that id)") from error
    before = PRESET_DICTIONARIES[1]
    depth = 0
    context_id = ""
    context_kind = "manifest" if flags & FLAG_CONTEXT_MANIFEST else "chunk"
    plaintext = body
    if flags & FLAG_DEFLATE:
        if len(body) == 0:
            raise ChunkIntegrityError(key_name, "is deflated but empty (malformed)")
        dictionary = PRESET_DICTIONARIES.get(body[0])
        if dictionary is None:
            raise ChunkIntegrityError(key_name, f"is deflated with preset dictionary {body[0]}, which this version does not know")
        body = body[1:]
        if flags & FLAG_CONTEXT:
            depth = body[0] if len(body) > 0 else 0
            if len(body) < 33 or depth < 1 or depth > MAX_CONTEXT_DEPTH:
                raise ChunkIntegrityError(key_name, f"is on a chain of {depth} contexts (at most {MAX_CONTEXT_DEPTH})" if depth > MAX_CONTEXT_DEPTH else "names a context in a malformed header")
            context_id = body[1:33].hex()
            body = body[33:]
        # The plaintext's length, checked against the bound before anything is inflated or fetched.
        if len(body) < 4:
            raise ChunkIntegrityError(key_name, "is deflated but truncated (malformed)")
        stated = int.from_bytes(body[:4], "big")
        if stated > MAX_OBJECT_BYTES:
            raise ChunkIntegrityError(key_name, f"states a plaintext of {stated} bytes, more than the {MAX_OBJECT_BYTES} any object has")
        body = body[4:]
        if flags & FLAG_CONTEXT:
            dictionary = before = context_window(context_id, depth - 1, context_kind)
        plaintext = _inflate_stated(body, stated, dictionary, lambda reason: ChunkIntegrityError(key_name, reason))
    # A chunk or manifest deflated against a context is named by both; a node by its plaintext.
    bound = depth > 0 and kind != "node"
    expected = contextual_id(plaintext, context_id, key, context_kind) if bound else object_id(plaintext, key)
    if not hmac.compare_digest(expected, oid):
        raise ChunkIntegrityError(key_name, "content does not match its name (hash mismatch: corrupted or replaced)")
    return plaintext, (before + plaintext)[-WINDOW_BYTES:], depth


def claim_data_for(manifest_id: str, key_id: str | None) -> dict[str, str]:
    """A claim's data: ``m``, the hex manifest id's 32 bytes in base64url without padding, and
    ``k``, the key id, when encrypted."""
    m = base64.urlsafe_b64encode(bytes.fromhex(manifest_id)).rstrip(b"=").decode("ascii")
    return {"m": m} if key_id is None else {"m": m, "k": key_id}


def _parse_claim(claim_data: Mapping[str, object]) -> tuple[str, str | None] | str:
    """(hex manifest id, key id or None) of a claim, or a phrase saying why it is not one."""
    unknown = sorted(name for name in claim_data if name not in ("m", "k"))
    if unknown:
        return f"has fields other than m and k ({', '.join(unknown)})"
    m, k = claim_data.get("m"), claim_data.get("k")
    if m is None:
        return "has no manifest id (m)" if k is None else "has a key id (k) but no manifest id (m)"
    raw = base64.urlsafe_b64decode(m + "=") if isinstance(m, str) and CLAIM_ID_PATTERN.fullmatch(m) else None
    # Re-encoding refuses the other spellings of the same bytes (unused low bits of the last character set).
    if raw is None or base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != m:
        return "has an m that is not a manifest id (43 characters of base64url without padding)"
    if k is not None and (not isinstance(k, str) or not KEY_ID_PATTERN.fullmatch(k)):
        return "has a k that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')"
    return raw.hex(), k


def read_claim(claim_data: Mapping[str, object]) -> tuple[str, str | None]:
    """(hex manifest id, key id or None) of a claim; ChunkIntegrityError naming the claim otherwise."""
    parsed = _parse_claim(claim_data)
    if isinstance(parsed, str):
        raise ChunkIntegrityError(f"claim {json.dumps(dict(claim_data), separators=(',', ':'))}", f"is not a temporal-compactor claim: it {parsed}")
    return parsed


def claim_manifest_id(claim_data: Mapping[str, object]) -> str | None:
    """The hex manifest id a claim names, or None when it is not a valid claim."""
    parsed = _parse_claim(claim_data)
    return None if isinstance(parsed, str) else parsed[0]


@dataclass(frozen=True)
class Entry:
    """An entry of a manifest or node: a node (``kind`` "node", its ``level``), bytes inline
    (``inline``), or ``length`` bytes at ``offset`` of a pack (``kind`` "pack") or of a manifest's
    inline bytes (``kind`` "manifest")."""

    kind: str
    id: str
    length: int
    level: int = 0
    offset: int = 0
    inline: bytes = b""


def _decode_entries(data: bytes, at: int, key_name: str, child_level: int | None) -> list[Entry]:
    """The entries from ``at`` to the end. In a node (``child_level``: its level - 1) every node is
    of that level, and inline bytes and slices sit only in level-1 nodes."""
    def malformed(what: str) -> ChunkIntegrityError:
        return ChunkIntegrityError(key_name, f"malformed entry: {what}")

    entries: list[Entry] = []
    while at < len(data):
        tag = data[at]
        if tag == 1:
            if child_level not in (None, 0):
                raise malformed("inline bytes in a node above level 1")
            if at + 3 > len(data):
                raise malformed("truncated")
            length = int.from_bytes(data[at + 1 : at + 3], "big")
            if length == 0 or at + 3 + length > len(data):
                raise malformed("inline bytes of a wrong length")
            entries.append(Entry("inline", "", length, inline=data[at + 3 : at + 3 + length]))
            at += 3 + length
        elif tag in (2, 3):
            if child_level not in (None, 0):
                raise malformed("a slice in a node above level 1")
            if at + 41 > len(data):
                raise malformed("truncated")
            length = int.from_bytes(data[at + 37 : at + 41], "big")
            if length == 0 or length > MAX_STORED_PAYLOAD_BYTES:
                raise malformed("a slice of a wrong length")
            kind = "pack" if tag == 2 else "manifest"
            entries.append(Entry(kind, data[at + 1 : at + 33].hex(), length, offset=int.from_bytes(data[at + 33 : at + 37], "big")))
            at += 41
        elif tag == 0:
            at += 1
            if child_level is None:
                if at >= len(data):
                    raise malformed("truncated")
                level = data[at]
                at += 1
            else:
                level = child_level
            if at + 36 > len(data):
                raise malformed("truncated")
            if level < 1:
                raise malformed("a node of level 0")
            entries.append(Entry("node", data[at : at + 32].hex(), int.from_bytes(data[at + 32 : at + 36], "big"), level=level))
            at += 36
        else:
            raise malformed(f"unknown tag {tag}")
    return entries


def _decode_node(plaintext: bytes, level: int, key_name: str) -> list[Entry]:
    if len(plaintext) < 2 or plaintext[0] != NODE_MAGIC:
        raise ChunkIntegrityError(key_name, "malformed tree node")
    if plaintext[1] < 1:
        raise ChunkIntegrityError(key_name, "tree node of level 0")
    if plaintext[1] != level:
        raise ChunkIntegrityError(key_name, f"tree node of level {plaintext[1]} where level {level} was expected")
    return _decode_entries(plaintext, 2, key_name, level - 1)


@dataclass(frozen=True)
class Manifest:
    size: int
    # (base manifest id, bytes of its payload kept, depth) or None.
    base: tuple[str, int, int] | None
    metadata: dict[str, bytes]
    entries: list[Entry]


def _parse_manifest(data: bytes, key_name: str) -> Manifest:
    def malformed(what: str) -> ChunkIntegrityError:
        return ChunkIntegrityError(key_name, f"manifest {what}")

    if data[:4] != MANIFEST_MAGIC:
        raise ChunkIntegrityError(key_name, "is not a temporal-compactor manifest")
    if len(data) < 11:
        raise malformed("is truncated")
    size = int.from_bytes(data[4:8], "big")
    if size > MAX_STORED_PAYLOAD_BYTES:
        raise malformed(f"states a payload of {size} bytes, more than the {MAX_STORED_PAYLOAD_BYTES} the store holds")
    depth = data[8]
    at = 9
    base = None
    if depth > 0:
        if depth > MAX_MANIFEST_DEPTH:
            raise malformed(f"is on a chain of {depth} manifests (at most {MAX_MANIFEST_DEPTH})")
        if len(data) < at + 38:
            raise malformed("is truncated")
        base = (data[at : at + 32].hex(), int.from_bytes(data[at + 32 : at + 36], "big"), depth)
        if base[1] > size:
            raise malformed("keeps more of its base than its size")
        at += 36
    if at + 2 > len(data):
        raise malformed("is truncated")
    count = int.from_bytes(data[at : at + 2], "big")
    at += 2
    metadata: dict[str, bytes] = {}
    for _ in range(count):
        if at + 2 > len(data):
            raise malformed("metadata is truncated")
        name_length = int.from_bytes(data[at : at + 2], "big")
        if at + 2 + name_length + 4 > len(data):
            raise malformed("metadata is truncated")
        name = data[at + 2 : at + 2 + name_length].decode("utf-8")
        at += 2 + name_length
        value_length = int.from_bytes(data[at : at + 4], "big")
        if at + 4 + value_length > len(data):
            raise malformed("metadata is truncated")
        metadata[name] = data[at + 4 : at + 4 + value_length]
        at += 4 + value_length
    entries = _decode_entries(data, at, key_name, None)
    listed = sum(entry.length for entry in entries)
    expected = size - (0 if base is None else base[1])
    if listed != expected:
        raise malformed(f"lists {listed} bytes where {expected} were expected")
    return Manifest(size, base, metadata, entries)


def _encode_manifest(data: bytes, metadata: Mapping[str, bytes]) -> bytes:
    """A manifest without a base that holds the whole payload inline."""
    encoded = bytearray(MANIFEST_MAGIC + len(data).to_bytes(4, "big") + b"\x00" + len(metadata).to_bytes(2, "big"))
    for name, value in metadata.items():
        raw_name = name.encode("utf-8")
        encoded += len(raw_name).to_bytes(2, "big") + raw_name + len(value).to_bytes(4, "big") + value
    for start in range(0, len(data), MAX_INLINE_BYTES):
        part = data[start : start + MAX_INLINE_BYTES]
        encoded += b"\x01" + len(part).to_bytes(2, "big") + part
    return bytes(encoded)


class ChunkStoreDriver(StorageDriver):
    """The ``compactor-chunks`` External Storage driver over an ``ObjectBackend``."""

    def __init__(self, backend: ObjectBackend, keyring: Keyring | None = None) -> None:
        self.backend = backend
        self.keyring = keyring
        # Windows of contexts read lately, by id, kind and key id.
        self._windows: dict[tuple[str, str, str | None], bytes] = {}
        # Manifests' inline bytes end to end (what a slice of a manifest is a range of), by id and key id.
        self._inline: dict[tuple[str, str | None], bytes] = {}

    def name(self) -> str:
        return DRIVER_NAME

    def type(self) -> str:
        return DRIVER_TYPE

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        # Backends block (files, boto3): off the event loop the worker polls on.
        return await asyncio.to_thread(lambda: [self._store_one(payload) for payload in payloads])

    async def retrieve(self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self._retrieve_one(claim) for claim in claims])

    def _store_one(self, payload: Payload) -> StorageDriverClaim:
        if payload.ByteSize() > MAX_STORED_PAYLOAD_BYTES:
            raise PayloadTooLargeError(
                f"a payload to store is {payload.ByteSize()} bytes, more than the {MAX_STORED_PAYLOAD_BYTES} it may have: "
                "no reader of the store allocates more for one payload"
            )
        plaintext = _encode_manifest(payload.data, payload.metadata)
        key = None if self.keyring is None else self.keyring.current
        oid = object_id(plaintext, key)
        # Always written: its modification time tells a gc that a claim to it was just handed out.
        self.backend.put(object_key("manifest", oid), seal_object(plaintext, key))
        return StorageDriverClaim(claim_data=claim_data_for(oid, None if key is None else key.id))

    def _open(self, kind: str, oid: str, key_id: str | None) -> tuple[bytes, bytes, int]:
        name = object_key(kind, oid)
        sealed = self.backend.get(name)
        if sealed is None:
            raise ChunkMissingError(name, self.backend.description)
        if len(sealed) > MAX_SEALED_OBJECT_BYTES:
            raise ChunkIntegrityError(name, f"is {len(sealed)} bytes, more than the {MAX_SEALED_OBJECT_BYTES} any object of the store takes")
        return open_object(sealed, kind, oid, name, key_id, self.keyring, lambda context, depth, context_kind: self._window(context, depth, key_id, context_kind))

    def _read(self, kind: str, oid: str, key_id: str | None) -> bytes:
        return self._open(kind, oid, key_id)[0]

    def _window(self, oid: str, depth: int, key_id: str | None, kind: str) -> bytes:
        """The window of ``oid`` (a chunk or a manifest), which an object names as its context at ``depth``."""
        cached = self._windows.get((oid, kind, key_id))
        if cached is not None:
            return cached
        _, window, own = self._open(kind, oid, key_id)
        if own != depth:
            raise ChunkIntegrityError(object_key(kind, oid), f"is at context depth {own} where the object deflated against it says {depth}")
        if len(self._windows) >= 256:
            self._windows.clear()
        self._windows[(oid, kind, key_id)] = window
        return window

    def _inline_bytes(self, oid: str, key_id: str | None) -> bytes:
        """The inline bytes of manifest ``oid`` end to end."""
        cached = self._inline.get((oid, key_id))
        if cached is not None:
            return cached
        manifest = _parse_manifest(self._read("manifest", oid, key_id), object_key("manifest", oid))
        inline = b"".join(entry.inline for entry in manifest.entries if entry.kind == "inline")
        if len(self._inline) >= 256:
            self._inline.clear()
        self._inline[(oid, key_id)] = inline
        return inline

    def _retrieve_one(self, claim: StorageDriverClaim) -> Payload:
        manifest_id, key_id = read_claim(claim.claim_data)
        metadata, data = self._payload_of(manifest_id, key_id, None)
        return Payload(metadata=metadata, data=data)

    def _payload_of(self, manifest_id: str, key_id: str | None, depth: int | None) -> tuple[dict[str, bytes], bytes]:
        """The metadata and data a manifest stands for; ``depth``: what the manifest that names it as
        its base says its depth is."""
        manifest_name = object_key("manifest", manifest_id)
        manifest = _parse_manifest(self._read("manifest", manifest_id, key_id), manifest_name)
        parts: list[bytes] = []
        # Packs read for this manifest: many of its slices lie in one.
        packs: dict[str, bytes] = {}

        def fill(entry: Entry, parent: str) -> None:
            if entry.kind == "inline":
                parts.append(entry.inline)
                return
            if entry.kind in ("pack", "manifest"):
                if entry.kind == "manifest":
                    source = self._inline_bytes(entry.id, key_id)
                else:
                    source = packs.get(entry.id) or packs.setdefault(entry.id, self._read("chunk", entry.id, key_id))
                if entry.offset + entry.length > len(source):
                    raise ChunkIntegrityError(parent, f"lists bytes {entry.offset}\u2013{entry.offset + entry.length} of {'pack' if entry.kind == 'pack' else 'manifest'} {entry.id}, which has {len(source)}")
                parts.append(source[entry.offset : entry.offset + entry.length])
                return
            name = object_key("node", entry.id)
            children = _decode_node(self._read("node", entry.id, key_id), entry.level, name)
            total = sum(child.length for child in children)
            if total != entry.length:
                raise ChunkIntegrityError(name, f"covers {total} bytes where {entry.length} were expected")
            for child in children:
                fill(child, name)

        own_depth = 0 if manifest.base is None else manifest.base[2]
        if depth is not None and own_depth != depth:
            raise ChunkIntegrityError(manifest_name, f"is at depth {own_depth} where its successor says {depth}")
        if manifest.base is not None:
            base_id, keep, base_depth = manifest.base
            _, base_data = self._payload_of(base_id, key_id, base_depth - 1)
            if len(base_data) < keep:
                raise ChunkIntegrityError(manifest_name, f"keeps {keep} bytes of base manifest {base_id}, which has {len(base_data)}")
            parts.append(base_data[:keep])
        for entry in manifest.entries:
            fill(entry, manifest_name)
        return manifest.metadata, b"".join(parts)


def data_converter_from_env(env: Mapping[str, str] = os.environ, backend: ObjectBackend | None = None) -> DataConverter:
    """The data converter that matches a temporal-compactor worker configured with ``env``.

    No store and no key: the SDK's default (plain JSON). A key only: the codec on every payload.
    A store: External Storage with the chunk store driver for payloads of at least
    ``COMPACTOR_PAYLOAD_THRESHOLD`` bytes, and the codec for the rest. ``backend`` replaces the
    store named in ``COMPACTOR_PAYLOAD_STORE`` (S3, say).
    """
    keyring = keyring_from_env(env)
    store = env.get("COMPACTOR_PAYLOAD_STORE", "").strip()
    if backend is None and store not in ("", "off"):
        if not store.startswith("file:"):
            raise ValueError(f"COMPACTOR_PAYLOAD_STORE: this reader opens file: stores itself; for {store} pass an ObjectBackend as backend")
        backend = FileBackend(store[len("file:") :])
    if backend is None:
        if keyring is None:
            return DataConverter()
        return DataConverter(payload_codec=CompactorCodec(keyring))
    threshold_text = env.get("COMPACTOR_PAYLOAD_THRESHOLD", "").strip() or str(DEFAULT_THRESHOLD)
    if not threshold_text.isdigit() or int(threshold_text) < 1:
        raise ValueError(f"COMPACTOR_PAYLOAD_THRESHOLD: expected a positive integer, got {json.dumps(threshold_text)}")
    threshold = int(threshold_text)
    return DataConverter(
        payload_codec=CompactorCodec(keyring, pass_through_at_or_above=threshold),
        external_storage=ExternalStorage(drivers=[ChunkStoreDriver(backend, keyring)], payload_size_threshold=threshold),
    )
