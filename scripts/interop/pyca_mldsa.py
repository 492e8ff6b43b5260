"""The other side of the ML-DSA-87 interop check: pyca `cryptography` (OpenSSL's ML-DSA).

Canonicalizes and hashes the card envelope itself (its own small RFC 8785 writer, enough for
cards without fractional numbers), so nothing on this side comes from Accord.

    keygen <dir>                                  writes <dir>/private.pem, <dir>/public.pem
    pem-roundtrip <in.pem> <out.pem>              load and re-serialize a private or public PEM
    check-pair <private.pem> <public.pem>         exit 0 if the public key belongs to the private key
    sign-card <private.pem> <card.json> <input> <out.json>
    verify-card <public.pem> <envelope.json> <input>   exit 0 if the signature verifies over <input>

<input> is shake256-digest (sign SHAKE256-64 of the canonical bytes) or raw-canonical.
"""

import base64
import hashlib
import json
import sys
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import mldsa

DAY_MS = 24 * 60 * 60 * 1000


def jcs(value):
    """RFC 8785 for the JSON a card holds: keys in UTF-16 code unit order, integers only."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs(k) + ":" + jcs(value[k]) for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise ValueError("integer beyond 2^53 needs the double form")
        return str(value)
    if isinstance(value, str):
        # json.dumps escapes exactly the RFC 8785 set: ", \, \b \f \n \r \t, other controls as \u00xx.
        return json.dumps(value, ensure_ascii=False)
    raise ValueError(f"unsupported JSON value {value!r}")


def message(envelope, signing_input):
    payload = {"card": envelope["card"], "signedAt": envelope["signedAt"], "expiresAt": envelope["expiresAt"]}
    canonical = jcs(payload).encode("utf-8")
    if signing_input == "shake256-digest":
        return hashlib.shake_256(canonical).digest(64)
    if signing_input == "raw-canonical":
        return canonical
    raise ValueError(f"unknown signing input {signing_input}")


def load_private(path):
    with open(path, "rb") as handle:
        key = serialization.load_pem_private_key(handle.read(), password=None)
    if not isinstance(key, mldsa.MLDSA87PrivateKey):
        raise SystemExit(f"{path}: not an ML-DSA-87 private key")
    return key


def load_public(path):
    with open(path, "rb") as handle:
        key = serialization.load_pem_public_key(handle.read())
    if not isinstance(key, mldsa.MLDSA87PublicKey):
        raise SystemExit(f"{path}: not an ML-DSA-87 public key")
    return key


def private_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def public_pem(key):
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def main(args):
    command = args[0] if args else ""
    if command == "keygen" and len(args) == 2:
        key = mldsa.MLDSA87PrivateKey.generate()
        with open(f"{args[1]}/private.pem", "wb") as handle:
            handle.write(private_pem(key))
        with open(f"{args[1]}/public.pem", "wb") as handle:
            handle.write(public_pem(key.public_key()))
        return 0
    if command == "pem-roundtrip" and len(args) == 3:
        with open(args[1], "rb") as handle:
            text = handle.read()
        out = private_pem(load_private(args[1])) if b"PRIVATE KEY" in text else public_pem(load_public(args[1]))
        with open(args[2], "wb") as handle:
            handle.write(out)
        return 0
    if command == "check-pair" and len(args) == 3:
        derived = public_pem(load_private(args[1]).public_key())
        return 0 if derived == public_pem(load_public(args[2])) else 1
    if command == "sign-card" and len(args) == 5:
        key = load_private(args[1])
        with open(args[2], encoding="utf-8") as handle:
            card = json.load(handle)
        now = int(time.time() * 1000)
        envelope = {"card": card, "signedAt": now, "expiresAt": now + DAY_MS}
        envelope["signature"] = base64.b64encode(key.sign(message(envelope, args[3]))).decode("ascii")
        with open(args[4], "w", encoding="utf-8") as handle:
            json.dump(envelope, handle, ensure_ascii=False, indent=2)
        return 0
    if command == "verify-card" and len(args) == 4:
        key = load_public(args[1])
        with open(args[2], encoding="utf-8") as handle:
            envelope = json.load(handle)
        try:
            key.verify(base64.b64decode(envelope["signature"], validate=True), message(envelope, args[3]))
        except InvalidSignature:
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
