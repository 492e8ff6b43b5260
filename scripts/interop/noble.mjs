// The other side of the ML-DSA-87 and SLH-DSA-SHAKE-256f interop check: @noble/post-quantum.
//
// noble works on raw keys, so this file has its own small DER reader and writer for PKCS#8 and
// SPKI, its own RFC 8785 writer (ECMAScript's key sort and JSON.stringify are the RFC's
// algorithms) and @noble/hashes' SHAKE256: nothing on this side comes from Accord.
//
//   keygen <alg> <dir>                              writes <dir>/private.pem, <dir>/public.pem
//   check-pair <alg> <private.pem> <public.pem>     exit 0 if noble derives exactly this public key
//                                                   (and, for SLH-DSA, this private key) from the seeds
//   sign-card <alg> <private.pem> <card.json> <input> <out.json>
//   verify-card <alg> <public.pem> <envelope.json> <input>   exit 0 if the signature verifies
//
// <alg> is ml-dsa-87 or slh-dsa-shake-256f; <input> is shake256-digest or raw-canonical.

import { readFileSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { ml_dsa87 } from "@noble/post-quantum/ml-dsa.js";
import { slh_dsa_shake_256f } from "@noble/post-quantum/slh-dsa.js";
import { shake256 } from "@noble/hashes/sha3.js";

const DAY_MS = 24 * 60 * 60 * 1000;

// Each algorithm: its OID's DER content bytes, and how its keys map to PKCS#8 / SPKI.
const ALGORITHMS = {
  "ml-dsa-87": {
    oid: [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x13], // 2.16.840.1.101.3.4.3.19
    scheme: ml_dsa87,
    seedLength: 32,
    // RFC 9881 seed-only private key: [0] IMPLICIT OCTET STRING (32 bytes).
    privateKeyField: (seed) => der(0x80, seed),
    seedFromPrivateKeyField: (field) => {
      const { tag, value, rest } = readTlv(field);
      if (tag !== 0x80 || value.length !== 32 || rest.length !== 0) throw new Error("not a seed-only ML-DSA key");
      return value;
    },
    secretKeyFromPrivateKeyField(field) {
      return ml_dsa87.keygen(this.seedFromPrivateKeyField(field)).secretKey;
    },
  },
  "slh-dsa-shake-256f": {
    oid: [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x1f], // 2.16.840.1.101.3.4.3.31
    scheme: slh_dsa_shake_256f,
    seedLength: 96, // SK.seed || SK.prf || PK.seed
    // FIPS 205 private key as is: SK.seed || SK.prf || PK.seed || PK.root (128 bytes).
    privateKeyField: (_seed, keys) => keys.secretKey,
    seedFromPrivateKeyField: (field) => {
      if (field.length !== 128) throw new Error("SLH-DSA-SHAKE-256f private key must be 128 bytes");
      return field.subarray(0, 96);
    },
    secretKeyFromPrivateKeyField: (field) => field,
  },
};

function algorithm(name) {
  const found = ALGORITHMS[name];
  if (!found) throw new Error(`unknown algorithm ${name}`);
  return found;
}

// --- DER -------------------------------------------------------------------------------------

function der(tag, value) {
  const length = value.length;
  let header;
  if (length < 0x80) header = [tag, length];
  else if (length < 0x100) header = [tag, 0x81, length];
  else if (length < 0x10000) header = [tag, 0x82, length >> 8, length & 0xff];
  else header = [tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff];
  return Buffer.concat([Buffer.from(header), Buffer.from(value)]);
}

function readTlv(bytes) {
  const tag = bytes[0];
  let length = bytes[1];
  let offset = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + bytes[2 + i];
    offset = 2 + count;
  }
  if (offset + length > bytes.length) throw new Error("truncated DER");
  return { tag, value: bytes.subarray(offset, offset + length), rest: bytes.subarray(offset + length) };
}

function algorithmIdentifier(alg) {
  return der(0x30, der(0x06, Buffer.from(alg.oid)));
}

function spki(alg, publicKey) {
  return der(0x30, Buffer.concat([algorithmIdentifier(alg), der(0x03, Buffer.concat([Buffer.from([0]), publicKey]))]));
}

function pkcs8(alg, privateKeyField) {
  const version = der(0x02, Buffer.from([0]));
  return der(0x30, Buffer.concat([version, algorithmIdentifier(alg), der(0x04, privateKeyField)]));
}

function expectOid(alg, algorithmIdentifierBytes) {
  const { tag, value } = readTlv(algorithmIdentifierBytes);
  const oid = readTlv(value);
  if (tag !== 0x30 || oid.tag !== 0x06 || !Buffer.from(oid.value).equals(Buffer.from(alg.oid)) || oid.rest.length !== 0) {
    throw new Error("key is for another algorithm");
  }
}

function readSpki(alg, derBytes) {
  const outer = readTlv(derBytes);
  const algId = readTlv(outer.value);
  expectOid(alg, outer.value);
  const bits = readTlv(algId.rest);
  if (bits.tag !== 0x03 || bits.value[0] !== 0) throw new Error("bad SPKI bit string");
  return bits.value.subarray(1);
}

function readPkcs8(alg, derBytes) {
  const outer = readTlv(derBytes);
  const version = readTlv(outer.value);
  if (version.tag !== 0x02) throw new Error("bad PKCS#8 version");
  const algId = readTlv(version.rest);
  expectOid(alg, version.rest);
  const key = readTlv(algId.rest);
  if (key.tag !== 0x04) throw new Error("bad PKCS#8 private key");
  return key.value;
}

// --- PEM -------------------------------------------------------------------------------------

function toPem(label, derBytes) {
  const lines = derBytes.toString("base64").match(/.{1,64}/g).join("\n");
  return `-----BEGIN ${label}-----\n${lines}\n-----END ${label}-----\n`;
}

function fromPem(label, text) {
  const match = text.match(new RegExp(`-----BEGIN ${label}-----([^-]+)-----END ${label}-----`));
  if (!match) throw new Error(`no ${label} PEM`);
  return Buffer.from(match[1].replace(/\s+/g, ""), "base64");
}

// --- RFC 8785 and the signed message ---------------------------------------------------------

function jcs(value) {
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${jcs(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function message(envelope, input) {
  const canonical = Buffer.from(jcs({ card: envelope.card, signedAt: envelope.signedAt, expiresAt: envelope.expiresAt }), "utf8");
  if (input === "shake256-digest") return shake256(canonical, { dkLen: 64 });
  if (input === "raw-canonical") return canonical;
  throw new Error(`unknown signing input ${input}`);
}

// --- commands --------------------------------------------------------------------------------

function main([command, ...args]) {
  if (command === "keygen" && args.length === 2) {
    const alg = algorithm(args[0]);
    const seed = randomBytes(alg.seedLength);
    const keys = alg.scheme.keygen(seed);
    writeFileSync(`${args[1]}/private.pem`, toPem("PRIVATE KEY", pkcs8(alg, alg.privateKeyField(seed, keys))));
    writeFileSync(`${args[1]}/public.pem`, toPem("PUBLIC KEY", spki(alg, keys.publicKey)));
    return 0;
  }
  if (command === "check-pair" && args.length === 3) {
    const alg = algorithm(args[0]);
    const field = readPkcs8(alg, fromPem("PRIVATE KEY", readFileSync(args[1], "utf8")));
    const publicKey = readSpki(alg, fromPem("PUBLIC KEY", readFileSync(args[2], "utf8")));
    const keys = alg.scheme.keygen(alg.seedFromPrivateKeyField(field));
    const samePublic = Buffer.from(keys.publicKey).equals(Buffer.from(publicKey));
    const sameSecret = Buffer.from(keys.secretKey).equals(Buffer.from(alg.secretKeyFromPrivateKeyField(field)));
    return samePublic && sameSecret ? 0 : 1;
  }
  if (command === "sign-card" && args.length === 5) {
    const alg = algorithm(args[0]);
    const secretKey = alg.secretKeyFromPrivateKeyField(readPkcs8(alg, fromPem("PRIVATE KEY", readFileSync(args[1], "utf8"))));
    const card = JSON.parse(readFileSync(args[2], "utf8"));
    const now = Date.now();
    const envelope = { card, signedAt: now, expiresAt: now + DAY_MS };
    envelope.signature = Buffer.from(alg.scheme.sign(message(envelope, args[3]), secretKey)).toString("base64");
    writeFileSync(args[4], JSON.stringify(envelope, null, 2));
    return 0;
  }
  if (command === "verify-card" && args.length === 4) {
    const alg = algorithm(args[0]);
    const publicKey = readSpki(alg, fromPem("PUBLIC KEY", readFileSync(args[1], "utf8")));
    const envelope = JSON.parse(readFileSync(args[2], "utf8"));
    const signature = Buffer.from(envelope.signature, "base64");
    return alg.scheme.verify(signature, message(envelope, args[3]), publicKey) ? 0 : 1;
  }
  console.error("usage: keygen | check-pair | sign-card | verify-card (see the header of noble.mjs)");
  return 2;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  console.error(`noble: ${error.message}`);
  process.exitCode = 2;
}
