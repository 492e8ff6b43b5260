// Writes the @noble/post-quantum golden files of this folder. Run where scripts/interop-signatures
// installed noble: cp crates/accord-card/testdata/keys/generate-noble.mjs target/interop/ &&
//   node target/interop/generate-noble.mjs crates/accord-card/testdata/keys
import { writeFileSync } from "node:fs";
import { ml_dsa87 } from "@noble/post-quantum/ml-dsa.js";
import { slh_dsa_shake_256f } from "@noble/post-quantum/slh-dsa.js";
import { shake256 } from "@noble/hashes/sha3.js";
const out = process.argv[2];
function der(tag, value) { const l = value.length; const h = l < 0x80 ? [tag, l] : l < 0x100 ? [tag, 0x81, l] : [tag, 0x82, l >> 8, l & 0xff]; return Buffer.concat([Buffer.from(h), Buffer.from(value)]); }
const OID = { ml: [0x60,0x86,0x48,0x01,0x65,0x03,0x04,0x03,0x13], slh: [0x60,0x86,0x48,0x01,0x65,0x03,0x04,0x03,0x1f] };
const algId = (o) => der(0x30, der(0x06, Buffer.from(o)));
const pkcs8 = (o, field) => der(0x30, Buffer.concat([der(0x02, Buffer.from([0])), algId(o), der(0x04, field)]));
const spki = (o, pk) => der(0x30, Buffer.concat([algId(o), der(0x03, Buffer.concat([Buffer.from([0]), pk]))]));
const pem = (label, d) => `-----BEGIN ${label}-----\n${d.toString("base64").match(/.{1,64}/g).join("\n")}\n-----END ${label}-----\n`;
function jcs(v) { if (Array.isArray(v)) return `[${v.map(jcs).join(",")}]`; if (v !== null && typeof v === "object") return `{${Object.keys(v).sort().map(k => `${JSON.stringify(k)}:${jcs(v[k])}`).join(",")}}`; return JSON.stringify(v); }
const card = {issuer:"agent.example.com",agentId:"golden-bot",version:"1.0.0",capabilities:["chat.respond","tool.search"],endpoints:[{url:"https://agent.example.com/a2a"}]};
const env = {card, signedAt: 1767225600000, expiresAt: 1767225600000 + 86400000};
const digest = shake256(Buffer.from(jcs(env), "utf8"), { dkLen: 64 });
// ML-DSA-87, seed 00..1f: the "both" and "expanded-only" private key forms, and a deterministic signature.
const mlSeed = Uint8Array.from({length: 32}, (_, i) => i);
const ml = ml_dsa87.keygen(mlSeed);
writeFileSync(`${out}/ml-dsa-87.noble-both.private.pem`, pem("PRIVATE KEY", pkcs8(OID.ml, der(0x30, Buffer.concat([der(0x04, mlSeed), der(0x04, ml.secretKey)])))));
writeFileSync(`${out}/ml-dsa-87.noble-expanded.private.pem`, pem("PRIVATE KEY", pkcs8(OID.ml, der(0x04, ml.secretKey))));
const otherSeed = Uint8Array.from({length: 32}, (_, i) => 255 - i);
const other = ml_dsa87.keygen(otherSeed);
writeFileSync(`${out}/ml-dsa-87.noble-both-mismatched.private.pem`, pem("PRIVATE KEY", pkcs8(OID.ml, der(0x30, Buffer.concat([der(0x04, mlSeed), der(0x04, other.secretKey)])))));
writeFileSync(`${out}/envelope.ml-dsa-87.noble-deterministic.shake256-digest.json`, JSON.stringify({...env, signature: Buffer.from(ml_dsa87.sign(digest, ml.secretKey, {extraEntropy: false})).toString("base64")}, null, 2));
// SLH-DSA-SHAKE-256f, seeds 00..5f.
const slhSeed = Uint8Array.from({length: 96}, (_, i) => i);
const slh = slh_dsa_shake_256f.keygen(slhSeed);
writeFileSync(`${out}/slh-dsa-shake-256f.noble.private.pem`, pem("PRIVATE KEY", pkcs8(OID.slh, slh.secretKey)));
writeFileSync(`${out}/slh-dsa-shake-256f.noble.public.pem`, pem("PUBLIC KEY", spki(OID.slh, slh.publicKey)));
writeFileSync(`${out}/envelope.slh-dsa-shake-256f.noble-deterministic.shake256-digest.json`, JSON.stringify({...env, signature: Buffer.from(slh_dsa_shake_256f.sign(digest, slh.secretKey, {extraEntropy: false})).toString("base64")}, null, 2));
