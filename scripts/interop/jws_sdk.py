"""The other side of scripts/interop-jws: the official A2A Python SDK's card signing utilities
(`a2a.utils.signing`, the `signing` extra: PyJWT over pyca `cryptography`) for ES256 and EdDSA, and
pyca `cryptography`'s ML-DSA-87 (OpenSSL) over the SDK's own canonical form for ML-DSA-87.

Commands (exit 0 = done / valid, 1 = refused, 2 = broken):
  keygen ES256|EdDSA DIR                      private.pem (PKCS#8), public.pem (SPKI), jwks.json (kid "sdk-1")
  sign ES256|EdDSA KID PRIVATE.pem CARD OUT   the SDK's create_agent_card_signer
  verify ALGS JWKS CARD                       the SDK's create_signature_verifier (ALGS comma-separated)
  mldsa-sign KID PRIVATE.pem CARD OUT         an ML-DSA-87 JWS by pyca over the SDK's canonical card
  mldsa-verify PUBLIC.pem CARD                checks the card's ML-DSA-87 signatures with pyca
  tamper CARD OUT                             the card with its first skill's description changed
"""

import base64
import json
import sys
from pathlib import Path

import jwt
from a2a.types import AgentCard
from a2a.utils import signing
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa
from google.protobuf.json_format import MessageToDict, ParseDict


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def read_card(path: str) -> AgentCard:
    # Unknown members are dropped, as an SDK client reading a card does.
    return ParseDict(json.loads(Path(path).read_text(encoding="utf-8")), AgentCard(), ignore_unknown_fields=True)


def write_json(path: str, value) -> None:
    Path(path).write_text(json.dumps(value, ensure_ascii=False, indent=2), encoding="utf-8")


def keygen(alg: str, out: str) -> int:
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1()) if alg == "ES256" else ed25519.Ed25519PrivateKey.generate()
    (directory / "private.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public = key.public_key()
    (directory / "public.pem").write_bytes(
        public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    algorithm = jwt.algorithms.ECAlgorithm if alg == "ES256" else jwt.algorithms.OKPAlgorithm
    jwk = algorithm.to_jwk(public, as_dict=True)
    jwk.update({"kid": "sdk-1", "use": "sig", "alg": alg})
    write_json(str(directory / "jwks.json"), {"keys": [jwk]})
    return 0


def sign(alg: str, kid: str, private: str, card: str, out: str) -> int:
    signer = signing.create_agent_card_signer(
        signing_key=Path(private).read_bytes(),
        protected_header={"alg": alg, "kid": kid, "typ": "JOSE"},
    )
    signed = signer(read_card(card))
    write_json(out, MessageToDict(signed))
    return 0


def verify(algs: str, jwks: str, card: str) -> int:
    keys = {key["kid"]: jwt.PyJWK(key) for key in json.loads(Path(jwks).read_text())["keys"]}

    def key_provider(kid, _jku):
        if kid not in keys:
            raise jwt.exceptions.PyJWKError(f"unknown kid {kid!r}")
        return keys[kid]

    verifier = signing.create_signature_verifier(key_provider, algs.split(","))
    try:
        verifier(read_card(card))
    except signing.SignatureVerificationError as error:
        print(f"refused: {type(error).__name__}: {error}")
        return 1
    print("valid")
    return 0


def signing_input(protected: str, card: AgentCard) -> bytes:
    # The SDK's own canonical form: the same bytes its verifier reconstructs.
    payload = signing._canonicalize_agent_card(card).encode("utf-8")
    return f"{protected}.{b64url(payload)}".encode("ascii")


def mldsa_sign(kid: str, private: str, card: str, out: str) -> int:
    key = serialization.load_pem_private_key(Path(private).read_bytes(), password=None)
    assert isinstance(key, mldsa.MLDSA87PrivateKey), type(key)
    parsed = read_card(card)
    protected = b64url(json.dumps({"alg": "ML-DSA-87", "kid": kid, "typ": "JOSE"}, separators=(",", ":")).encode())
    signature = key.sign(signing_input(protected, parsed))
    document = MessageToDict(parsed)
    document.setdefault("signatures", []).append({"protected": protected, "signature": b64url(signature)})
    write_json(out, document)
    return 0


def mldsa_verify(public: str, card: str) -> int:
    key = serialization.load_pem_public_key(Path(public).read_bytes())
    assert isinstance(key, mldsa.MLDSA87PublicKey), type(key)
    parsed = read_card(card)
    checked = 0
    for entry in parsed.signatures:
        header = json.loads(b64url_decode(entry.protected))
        if header.get("alg") != "ML-DSA-87":
            continue
        checked += 1
        try:
            key.verify(b64url_decode(entry.signature), signing_input(entry.protected, parsed))
        except InvalidSignature:
            continue
        print(f"valid (kid {header.get('kid')})")
        return 0
    print(f"refused: {checked} ML-DSA-87 signature(s), none valid")
    return 1


def tamper(card: str, out: str) -> int:
    document = json.loads(Path(card).read_text(encoding="utf-8"))
    document["skills"][0]["description"] = "Tampered: deletes everything."
    write_json(out, document)
    return 0


COMMANDS = {
    "keygen": keygen,
    "sign": sign,
    "verify": verify,
    "mldsa-sign": mldsa_sign,
    "mldsa-verify": mldsa_verify,
    "tamper": tamper,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(COMMANDS[sys.argv[1]](*sys.argv[2:]))
    except Exception as error:  # a broken run is exit 2, never a refusal
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(2)
