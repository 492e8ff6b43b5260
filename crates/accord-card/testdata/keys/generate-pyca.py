"""Writes the pyca `cryptography` golden files of this folder (ML-DSA-87, seed 00..1f).

Run from the repository root after scripts/interop-signatures has installed the venv:
    target/interop/venv/bin/python crates/accord-card/testdata/keys/generate-pyca.py crates/accord-card/testdata/keys
"""

import base64
import json
import sys

sys.path.insert(0, "scripts/interop")
import pyca_mldsa as side  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import mldsa  # noqa: E402

out = sys.argv[1]
key = mldsa.MLDSA87PrivateKey.from_seed_bytes(bytes(range(32)))
with open(f"{out}/ml-dsa-87.pyca.private.pem", "wb") as handle:
    handle.write(side.private_pem(key))
with open(f"{out}/ml-dsa-87.pyca.public.pem", "wb") as handle:
    handle.write(side.public_pem(key.public_key()))
card = {
    "issuer": "agent.example.com",
    "agentId": "golden-bot",
    "version": "1.0.0",
    "capabilities": ["chat.respond", "tool.search"],
    "endpoints": [{"url": "https://agent.example.com/a2a"}],
}
for signing_input in ("raw-canonical", "shake256-digest"):
    envelope = {"card": card, "signedAt": 1767225600000, "expiresAt": 1767225600000 + 86400000}
    envelope["signature"] = base64.b64encode(key.sign(side.message(envelope, signing_input))).decode()
    with open(f"{out}/envelope.ml-dsa-87.pyca.{signing_input}.json", "w") as handle:
        json.dump(envelope, handle, indent=2)
