// The official JavaScript A2A SDK client (@a2a-js/sdk 1.x) against an Accord agent that fronts
// remote A2A agents ([[a2a]] entries of its agent file): a blocking send to each skill named,
// whose answer must carry the remote agent's artifact "echo: <text>".
//
// Usage: node a2a_front_js_client.mjs ACCORD_URL BINDING SKILL...
//   BINDING: JSONRPC, HTTP+JSON or GRPC (the SDK's GrpcTransportFactory, from
//   @a2a-js/sdk/client/grpc; needs @grpc/grpc-js and @bufbuild/protobuf beside the SDK).
// Prints one PASS/FAIL line per skill and exits non-zero on any failure. Run it from a folder
// whose node_modules holds the SDK (scripts/interop-a2a-front copies it into its npm prefix).
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

const [BASE, BINDING, ...SKILLS] = process.argv.slice(2);
if (!BASE || !['JSONRPC', 'HTTP+JSON', 'GRPC'].includes(BINDING) || SKILLS.length === 0) {
  console.error('usage: node a2a_front_js_client.mjs ACCORD_URL JSONRPC|HTTP+JSON|GRPC SKILL...');
  process.exit(2);
}
const CALL_MS = 20_000;
let failures = 0;

function check(name, ok, detail = '') {
  if (!ok) failures += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} js-sdk ${BINDING} ${name}${!ok && detail ? `: ${detail}` : ''}`);
}

const show = (value) => {
  const text = JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v));
  return text && text.length > 500 ? `${text.slice(0, 500)}...` : text;
};
const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

// Requests are built complete, as the SDK's (ts-proto) types declare them.
const message = (text, skill) => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: { skillId: skill },
  extensions: [],
  referenceTaskIds: [],
});
const sendRequest = (msg) => ({
  tenant: '',
  message: msg,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: false },
  metadata: undefined,
});

// The binding's transport alone (not merged into the SDK's defaults): no fallback to another.
const transport = {
  JSONRPC: () => new JsonRpcTransportFactory(),
  'HTTP+JSON': () => new RestTransportFactory(),
  GRPC: () => new GrpcTransportFactory(),
}[BINDING]();
const factory = new ClientFactory({ transports: [transport], preferredTransports: [BINDING] });
const client = await factory.createFromUrl(BASE.endsWith('/') ? BASE : `${BASE}/`);
for (const skill of SKILLS) {
  const text = `hello ${skill} over ${BINDING} ${randomUUID().slice(0, 8)}`;
  const name = `-> ${skill}: the remote agent's echo comes back`;
  try {
    const task = await client.sendMessage(sendRequest(message(text, skill)), { signal: AbortSignal.timeout(CALL_MS) });
    const echoes = (task?.artifacts ?? []).map((a) => textOf(a.parts));
    check(name, task?.status?.state === TaskState.TASK_STATE_COMPLETED && echoes.includes(`echo: ${text}`), show(task));
  } catch (error) {
    check(name, false, `${error?.name}: ${error?.message}`);
  }
}
process.exit(failures ? 1 : 0);
