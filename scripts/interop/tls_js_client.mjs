// The official JavaScript A2A SDK client (@a2a-js/sdk) against an Accord agent served over TLS.
//
// Usage: node tls_js_client.mjs BASE_URL BINDING [untrusted]   (BINDING: JSONRPC or HTTP+JSON)
//
// Node's fetch trusts the test CA through NODE_EXTRA_CA_CERTS, which the caller sets (Node reads
// it once, at start). With it: the card (https URLs, the mTLS scheme), SendMessage, GetTask, a
// stream, and the scoped skill refused to this client (it presents no certificate). With
// `untrusted` (run without NODE_EXTRA_CA_CERTS): the card fetch must fail on the server's
// certificate.
//
// Prints one "PASS js-sdk BINDING name" / "FAIL js-sdk BINDING name: detail" line per check and
// exits non-zero on any failure; every call has a deadline, and the whole run a hard one. The SDK
// is imported by bare name: run this file from a folder whose node_modules holds @a2a-js/sdk.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

const [BASE, BINDING, MODE] = [process.argv[2], process.argv[3], process.argv[4] ?? 'trusted'];
if (!BASE || !['JSONRPC', 'HTTP+JSON'].includes(BINDING) || !['trusted', 'untrusted'].includes(MODE)) {
  console.error('usage: node tls_js_client.mjs BASE_URL JSONRPC|HTTP+JSON [untrusted]');
  process.exit(2);
}
const BASE_URL = BASE.endsWith('/') ? BASE : `${BASE}/`;
const CALL_MS = 20_000;
let failures = 0;

function check(name, ok, detail = '') {
  if (!ok) failures += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} js-sdk ${BINDING} ${name}${!ok && detail ? `: ${detail}` : ''}`);
}

setTimeout(() => {
  console.log(`FAIL js-sdk ${BINDING} the run ends in time: still running after 60 s`);
  process.exit(1);
}, 60_000).unref();

const show = (value) => {
  const text = JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v));
  return text && text.length > 600 ? `${text.slice(0, 600)}...` : text;
};
const describe = (error) =>
  error ? `${error.name}: ${error.message}${error.cause ? ` (cause: ${describe(error.cause)})` : ''}` : 'no error';
/** Every code in an error's cause chain (Node names TLS verification failures by code). */
const codes = (error) => (error ? [error.code, ...codes(error.cause)].filter(Boolean) : []);

async function within(what, promise) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${CALL_MS / 1000} s`)), CALL_MS);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error;
  }
}

// Requests complete, as the SDK's (ts-proto) types declare them.
const message = (text, skill) => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: skill ? { skillId: skill } : undefined,
  extensions: [],
  referenceTaskIds: [],
});
const sendRequest = (msg) => ({
  tenant: '',
  message: msg,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: false },
  metadata: undefined,
});
const callOptions = () => ({ signal: AbortSignal.timeout(CALL_MS) });
const isTask = (result) => result && typeof result === 'object' && 'status' in result && 'id' in result;
const resultText = (task) => {
  const artifact = (task?.artifacts ?? []).find((a) => a.artifactId === 'result');
  const content = artifact?.parts?.[0]?.content;
  return content?.$case === 'data' ? content.value?.text : undefined;
};

function makeClient() {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({}), new RestTransportFactory({})],
      preferredTransports: [BINDING],
    }),
  );
  return within('fetching the agent card', factory.createFromUrl(BASE_URL));
}

async function untrusted() {
  const error = await errorOf(makeClient());
  const found = codes(error);
  check(
    'without the test CA the card fetch fails on the certificate',
    found.some((code) => ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN'].includes(code)),
    `${describe(error)} codes ${show(found)}`,
  );
}

async function trusted() {
  const client = await makeClient();
  const card = await within('the card', fetch(new URL('.well-known/agent-card.json', BASE_URL)).then((r) => r.json()));
  const http = (card.supportedInterfaces ?? []).filter((i) => i.protocolBinding !== 'GRPC');
  check(
    "the card's URLs are https://",
    http.length > 0 && http.every((i) => i.url.startsWith('https://')),
    show(card.supportedInterfaces),
  );
  check('the card declares the mTLS security scheme', card.securitySchemes?.mtls?.mtlsSecurityScheme !== undefined, show(card.securitySchemes));
  const endpoint = client.transport.endpoint;
  check(
    'the client uses the https endpoint of the binding',
    client.transport.protocolName === BINDING && endpoint.startsWith('https://'),
    `${client.transport.protocolName} at ${endpoint}`,
  );

  const sent = await within('SendMessage', client.sendMessage(sendRequest(message('hello over TLS')), callOptions()));
  check(
    'SendMessage completes with the echo',
    isTask(sent) && sent.status?.state === TaskState.TASK_STATE_COMPLETED && resultText(sent) === 'hello over TLS',
    show(sent),
  );
  if (isTask(sent)) {
    const got = await within('GetTask', client.getTask({ tenant: '', id: sent.id, historyLength: 10 }, callOptions()));
    check(
      'GetTask returns the task',
      got.id === sent.id && got.status?.state === TaskState.TASK_STATE_COMPLETED && resultText(got) === 'hello over TLS',
      show(got),
    );
  }

  const events = [];
  await within(
    'SendStreamingMessage',
    (async () => {
      const stream = client.sendMessageStream(sendRequest(message('{"count": 3, "interval_ms": 20}', 'ticks')), callOptions());
      for await (const event of stream) events.push(event);
    })(),
  );
  const chunks = events
    .filter((e) => e.payload?.$case === 'artifactUpdate' && e.payload.value.artifact?.artifactId === 'stream')
    .map((e) => (e.payload.value.artifact.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(''));
  const last = events.at(-1)?.payload;
  check(
    'a stream starts with the task, carries the ticks and ends completed',
    events[0]?.payload?.$case === 'task' &&
      chunks.join('') === 'tick 1tick 2tick 3' &&
      last?.$case === 'statusUpdate' &&
      last.value.status?.state === TaskState.TASK_STATE_COMPLETED,
    show(events.map((e) => e.payload?.$case)),
  );

  // No client certificate: the demo's `slow` (scope demo:slow) is refused.
  const refused = await errorOf(within('SendMessage slow', client.sendMessage(sendRequest(message('{"seconds": 0}', 'slow')), callOptions())));
  check(
    'the scoped skill is refused without a client certificate',
    refused !== null && /scope 'demo:slow' required/.test(String(refused?.message)),
    describe(refused),
  );
}

try {
  await (MODE === 'untrusted' ? untrusted() : trusted());
} catch (error) {
  check('the run goes to the end', false, describe(error));
}
console.log(`js-sdk ${BINDING}: ${failures === 0 ? 'ok' : `${failures} failed`}`);
process.exit(failures === 0 ? 0 : 1);
