// The official JavaScript A2A SDK client (@a2a-js/sdk) against an Accord agent: every operation,
// checked, over one binding.
//
// Usage: node a2a_js_client.mjs BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)
// With INTEROP_BEARER_TOKEN set (a token the server knows, e.g. `accord serve --demo-token`), it
// also checks that ListTasks and GetTask are scoped to the caller.
//
// Prints one "PASS js-sdk BINDING name" / "FAIL js-sdk BINDING name: detail" line per check and
// exits non-zero on any failure. Every call has its own deadline and the whole run a hard one, so
// it never hangs. The SDK is imported by bare name: run this file from a folder whose
// node_modules holds @a2a-js/sdk (scripts/interop-a2a copies it into its npm prefix).
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

const [BASE, BINDING] = [process.argv[2], process.argv[3]];
if (!BASE || !['JSONRPC', 'HTTP+JSON'].includes(BINDING)) {
  console.error('usage: node a2a_js_client.mjs BASE_URL JSONRPC|HTTP+JSON');
  process.exit(2);
}
const BASE_URL = BASE.endsWith('/') ? BASE : `${BASE}/`;
const TOKEN = process.env.INTEROP_BEARER_TOKEN ?? '';
const OVERALL_MS = 120_000;
const CALL_MS = 20_000;
// The path each official binding has on Accord's card.
const BINDING_PATH = { JSONRPC: '/a2a/jsonrpc', 'HTTP+JSON': '/a2a/rest' }[BINDING];

let failures = 0;
let passes = 0;

function check(name, ok, detail = '') {
  if (ok) {
    passes += 1;
    console.log(`PASS js-sdk ${BINDING} ${name}`);
  } else {
    failures += 1;
    console.log(`FAIL js-sdk ${BINDING} ${name}${detail ? `: ${detail}` : ''}`);
  }
}

// The hard overall deadline: whatever is pending, the run ends with a failure.
setTimeout(() => {
  console.log(`FAIL js-sdk ${BINDING} the run ends in time: still running after ${OVERALL_MS / 1000} s`);
  process.exit(1);
}, OVERALL_MS).unref();

const show = (value) => {
  const text = JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v));
  return text && text.length > 600 ? `${text.slice(0, 600)}...` : text;
};
const stateName = (state) => TaskState[state] ?? String(state);
const describeError = (error) =>
  error
    ? `${error.name}: ${error.message}` +
      (error.reason ? ` [reason ${error.reason}]` : '') +
      (error.envelopeCode !== undefined ? ` [code ${error.envelopeCode}]` : '') +
      (error.statusCode !== undefined ? ` [HTTP ${error.statusCode}]` : '') +
      (error.cause ? ` (cause: ${describeError(error.cause)})` : '')
    : 'no error';

/** Options for one call: its own deadline. */
const callOptions = () => ({ signal: AbortSignal.timeout(CALL_MS) });

/** Runs a promise-returning step within the call deadline. */
async function within(what, promise, ms = CALL_MS) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Collects a stream's events within the call deadline. */
async function collect(stream, what, ms = CALL_MS) {
  const events = [];
  await within(
    what,
    (async () => {
      for await (const event of stream) events.push(event);
    })(),
    ms,
  );
  return events;
}

/** The error a call throws, or null when it succeeds. */
async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error;
  }
}

/** The SDK reports an error carried inside an SSE stream as an Error whose cause is the A2A error. */
const a2aError = (error) => (error && !error.reason && error.cause?.reason ? error.cause : error);

/**
 * Whether `error` is the A2A error `name` with `reason`, carrying the binding's code for it
 * (JSON-RPC error code; HTTP status of the v1.0.1 mapping).
 */
function isA2aError(error, name, reason, jsonRpcCode, httpStatus) {
  const e = a2aError(error);
  if (!e || e.name !== name || e.reason !== reason) return false;
  return BINDING === 'JSONRPC' ? e.envelopeCode === jsonRpcCode : e.statusCode === httpStatus;
}

// Requests are built complete, as the SDK's (ts-proto) types declare them: its JSON encoders
// write every field that differs from the proto default, so a missing enum reads as UNRECOGNIZED.
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
const sendRequest = (msg, returnImmediately = false) => ({
  tenant: '',
  message: msg,
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: undefined,
    historyLength: undefined,
    returnImmediately,
  },
  metadata: undefined,
});
const getRequest = (id, historyLength) => ({ tenant: '', id, historyLength });
const cancelRequest = (id) => ({ tenant: '', id, metadata: undefined });
const subscribeRequest = (id) => ({ tenant: '', id });
const listRequest = (fields) => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: undefined,
  pageToken: '',
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: undefined,
  ...fields,
});

/** Every URL the client's transport fetched, to check the binding's endpoint was used. */
const fetched = [];

/**
 * A client of the SDK that prefers `preferred` (or follows the card's order when null). Its
 * transports record the URLs they fetch and, with `token`, send it as a bearer token.
 */
async function makeClient(preferred, token = '') {
  const fetchImpl = (input, init = {}) => {
    fetched.push(String(input instanceof Request ? input.url : input));
    if (!token) return fetch(input, init);
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      ...(preferred ? { preferredTransports: [preferred] } : {}),
    }),
  );
  return within('fetching the agent card', factory.createFromUrl(BASE_URL));
}

const isTask = (result) => result && typeof result === 'object' && 'status' in result && 'id' in result;
const resultArtifact = (task) => (task?.artifacts ?? []).find((artifact) => artifact.artifactId === 'result');
const dataOf = (artifact) => {
  const content = artifact?.parts?.[0]?.content;
  return content?.$case === 'data' ? content.value : undefined;
};
const running = (state) => state === TaskState.TASK_STATE_SUBMITTED || state === TaskState.TASK_STATE_WORKING;

/** Starts a task that runs 30 s (the demo's `ticks`, 300 ticks; `slow` needs the scope `demo:slow`
 * once the server has a credential) and answers at once (returnImmediately). */
async function startSlow(client) {
  const result = await within(
    'SendMessage (ticks, returnImmediately)',
    client.sendMessage(sendRequest(message('{"count": 300}', 'ticks'), true), callOptions()),
  );
  if (!isTask(result)) throw new Error(`SendMessage (ticks) did not return a task: ${show(result)}`);
  return result;
}

async function main() {
  // --- Transport selection: the card lists a custom binding first; the SDK must pick by name.
  const client = await makeClient(BINDING);
  // The public card: the SDK's `getAgentCard` fetches the extended card instead, which this agent
  // declares and serves to authenticated callers only (checked below).
  const card = await within('fetching the card', fetch(new URL('.well-known/agent-card.json', BASE_URL)).then((r) => r.json()));
  const offered = (card.supportedInterfaces ?? []).find((i) => i.protocolBinding === BINDING);
  const endpoint = client.transport.endpoint;
  check(
    'the client picks the card entry of the binding',
    client.transport.protocolName === BINDING &&
      offered !== undefined &&
      offered.protocolVersion === '1.0' &&
      endpoint === offered.url.replace(/\/+$/, '') &&
      new URL(endpoint).pathname === BINDING_PATH,
    `transport ${client.transport.protocolName} at ${endpoint}; card entry ${show(offered)}`,
  );
  if (BINDING === 'JSONRPC') {
    // Without a preference the SDK walks the card's order and skips the entries it has no
    // transport for (the Lucid binding first): JSON-RPC comes before HTTP+JSON on the card.
    const unpreferred = await makeClient(null);
    check(
      'without a preference the first official binding on the card is used',
      unpreferred.transport.protocolName === 'JSONRPC' &&
        new URL(unpreferred.transport.endpoint).pathname === '/a2a/jsonrpc',
      `transport ${unpreferred.transport.protocolName} at ${unpreferred.transport.endpoint}`,
    );
  }

  // --- Blocking send: the default skill (echo) gets {"text": "hello"} and completes.
  const hello = message('hello');
  const sent = await within('SendMessage', client.sendMessage(sendRequest(hello), callOptions()));
  check('blocking send returns a task', isTask(sent), show(sent));
  if (!isTask(sent)) throw new Error('cannot go on without a task');
  check(
    'blocking send waits for completion',
    sent.status?.state === TaskState.TASK_STATE_COMPLETED,
    `state ${stateName(sent.status?.state)}`,
  );
  check(
    'the output is the result artifact',
    dataOf(resultArtifact(sent))?.text === 'hello',
    show(sent.artifacts),
  );
  check('the context id is generated', typeof sent.contextId === 'string' && sent.contextId.length > 0, show(sent));
  check(
    "the history starts with the caller's message",
    sent.history?.[0]?.messageId === hello.messageId && sent.history[0].role === Role.ROLE_USER,
    show(sent.history),
  );

  // --- GetTask, with historyLength.
  const got = await within('GetTask', client.getTask(getRequest(sent.id, 10), callOptions()));
  check(
    'get returns the same task',
    got.id === sent.id && got.contextId === sent.contextId && got.status?.state === TaskState.TASK_STATE_COMPLETED,
    show(got),
  );
  check(
    "history holds the user's message",
    (got.history ?? []).some((m) => m.role === Role.ROLE_USER && m.messageId === hello.messageId),
    show(got.history),
  );
  check('get carries the result artifact', dataOf(resultArtifact(got))?.text === 'hello', show(got.artifacts));
  const bare = await within('GetTask', client.getTask(getRequest(sent.id, 0), callOptions()));
  check(
    'historyLength 0 leaves the history out',
    bare.id === sent.id && (bare.history ?? []).length === 0,
    show(bare.history),
  );

  // --- ListTasks: newest first, in pages.
  const older = await within('SendMessage', client.sendMessage(sendRequest(message('older')), callOptions()));
  const newer = await within('SendMessage', client.sendMessage(sendRequest(message('newer')), callOptions()));
  const all = await within('ListTasks', client.listTasks(listRequest({ pageSize: 100 }), callOptions()));
  check('list includes the task', (all.tasks ?? []).some((t) => t.id === sent.id), show(all));
  check(
    'a list that fits one page has an empty nextPageToken',
    all.nextPageToken === '' && all.tasks.length <= 100,
    `nextPageToken ${show(all.nextPageToken)}, ${all.tasks?.length} tasks`,
  );
  check(
    'list omits artifacts unless asked',
    (all.tasks ?? []).every((t) => (t.artifacts ?? []).length === 0),
    show((all.tasks ?? []).find((t) => (t.artifacts ?? []).length > 0)),
  );
  const first = await within('ListTasks', client.listTasks(listRequest({ pageSize: 1 }), callOptions()));
  check(
    'list pages newest first',
    first.tasks?.length === 1 && first.tasks[0].id === newer.id && first.nextPageToken !== '',
    `${show(first)} (newest ${newer.id})`,
  );
  const next = listRequest({ pageSize: 1, pageToken: first.nextPageToken });
  const second = first.nextPageToken
    ? await within('ListTasks', client.listTasks(next, callOptions()))
    : { tasks: [] };
  check(
    'nextPageToken leads to the next page',
    second.tasks?.length === 1 && second.tasks[0].id === older.id,
    `${show(second)} (expected ${older.id})`,
  );
  const withArtifacts = await within(
    'ListTasks',
    client.listTasks(listRequest({ pageSize: 1, includeArtifacts: true }), callOptions()),
  );
  check(
    'includeArtifacts returns the result artifact',
    withArtifacts.tasks?.[0]?.id === newer.id && dataOf(resultArtifact(withArtifacts.tasks[0]))?.text === 'newer',
    show(withArtifacts),
  );

  if (TOKEN) {
    // The extended card: declared on the public card, refused to the anonymous caller with an
    // authentication error, served to the caller with a bearer token with the detailed skill.
    check('the card declares an extended card', card.capabilities?.extendedAgentCard === true, show(card.capabilities));
    const anonymous = await errorOf(within('GetExtendedAgentCard', client.getAgentCard(callOptions())));
    check(
      'the extended card is refused without credentials',
      anonymous !== null && /authenticated|401|-32000/.test(String(anonymous?.message ?? anonymous)),
      show(anonymous?.message ?? anonymous),
    );
    const owner = await makeClient(BINDING, TOKEN);
    const extended = await within('GetExtendedAgentCard', owner.getAgentCard(callOptions()));
    const slow = (extended.skills ?? []).find((skill) => skill.id === 'slow');
    check(
      'the extended card is served with credentials',
      slow !== undefined && (slow.tags ?? []).includes('demo:slow'),
      show(slow),
    );

    // Caller-scoped: a caller with a bearer token and the anonymous caller see only their own.
    const mine = await within('SendMessage', owner.sendMessage(sendRequest(message('mine')), callOptions()));
    const ownList = await within('ListTasks', owner.listTasks(listRequest({ pageSize: 100 }), callOptions()));
    const anonList = await within('ListTasks', client.listTasks(listRequest({ pageSize: 100 }), callOptions()));
    check(
      "list holds only the caller's tasks",
      isTask(mine) &&
        ownList.tasks.some((t) => t.id === mine.id) &&
        !ownList.tasks.some((t) => t.id === sent.id) &&
        !anonList.tasks.some((t) => t.id === mine.id),
      `own ${show(ownList.tasks.map((t) => t.id))}, ` +
        `anonymous ${show(anonList.tasks.map((t) => t.id))}, mine ${mine?.id}`,
    );
    const foreign = await errorOf(within('GetTask', client.getTask(getRequest(mine.id), callOptions())));
    check(
      "another caller's task reads as not found",
      isA2aError(foreign, 'TaskNotFoundError', 'TASK_NOT_FOUND', -32001, 404),
      describeError(foreign),
    );
  } else {
    console.log(`SKIP js-sdk ${BINDING} caller-scoped list: INTEROP_BEARER_TOKEN is not set`);
  }

  // --- Cancel: a running task, then tasks that have ended.
  const slow = await startSlow(client);
  check(
    'returnImmediately answers before the end',
    running(slow.status?.state),
    `state ${stateName(slow.status?.state)}`,
  );
  const cancelled = await within('CancelTask', client.cancelTask(cancelRequest(slow.id), callOptions()));
  check(
    'cancel returns the canceled task',
    cancelled.id === slow.id && cancelled.status?.state === TaskState.TASK_STATE_CANCELED,
    show(cancelled),
  );
  const afterCancel = await within('GetTask', client.getTask(getRequest(slow.id), callOptions()));
  check(
    'the task stays canceled',
    afterCancel.status?.state === TaskState.TASK_STATE_CANCELED,
    `state ${stateName(afterCancel.status?.state)}`,
  );
  const completedCancel = await errorOf(
    within('CancelTask', client.cancelTask(cancelRequest(sent.id), callOptions())),
  );
  check(
    'cancel of a completed task is TaskNotCancelableError',
    isA2aError(completedCancel, 'TaskNotCancelableError', 'TASK_NOT_CANCELABLE', -32002, 400),
    describeError(completedCancel),
  );
  const cancelledCancel = await errorOf(
    within('CancelTask', client.cancelTask(cancelRequest(slow.id), callOptions())),
  );
  check(
    'cancel of a canceled task is TaskNotCancelableError',
    isA2aError(cancelledCancel, 'TaskNotCancelableError', 'TASK_NOT_CANCELABLE', -32002, 400),
    describeError(cancelledCancel),
  );

  // --- Streaming send: the task first, then updates, ending completed.
  const events = await collect(
    client.sendMessageStream(sendRequest(message('stream me')), callOptions()),
    'SendStreamingMessage',
  );
  const kinds = events.map((event) => event.payload?.$case);
  const streamTask = events[0]?.payload?.$case === 'task' ? events[0].payload.value : undefined;
  check(
    'a stream starts with the task',
    streamTask !== undefined && running(streamTask.status?.state),
    show(events[0]),
  );
  const updates = events.slice(1).map((event) => event.payload?.value);
  check(
    'stream updates name the task and its context',
    updates.length > 0 &&
      updates.every((u) => u?.taskId === streamTask?.id && u?.contextId === streamTask?.contextId),
    show(updates),
  );
  const artifactAt = events.findIndex(
    (event) => event.payload?.$case === 'artifactUpdate' && event.payload.value.artifact?.artifactId === 'result',
  );
  check(
    'a stream carries the result artifact',
    artifactAt > 0 && dataOf(events[artifactAt].payload.value.artifact)?.text === 'stream me',
    show(kinds),
  );
  const last = events.at(-1)?.payload;
  check(
    'a stream ends completed, after the artifact',
    last?.$case === 'statusUpdate' &&
      last.value.status?.state === TaskState.TASK_STATE_COMPLETED &&
      artifactAt < events.length - 1,
    show(kinds),
  );
  const streamed = streamTask
    ? await within('GetTask', client.getTask(getRequest(streamTask.id), callOptions()))
    : undefined;
  check(
    'the streamed task is stored completed',
    streamed?.status?.state === TaskState.TASK_STATE_COMPLETED &&
      dataOf(resultArtifact(streamed))?.text === 'stream me',
    show(streamed),
  );

  // --- Progress: the demo's `ticks` streams its deltas as chunks of one artifact, before the end.
  const ticking = await collect(
    client.sendMessageStream(sendRequest(message('{"count": 3}', 'ticks')), callOptions()),
    'SendStreamingMessage ticks',
  );
  const chunks = ticking
    .map((event, at) => ({ event: event.payload, at }))
    .filter(({ event }) => event?.$case === 'artifactUpdate' && event.value.artifact?.artifactId === 'stream');
  const chunkText = (event) =>
    (event.value.artifact?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
  const doneAt = ticking.findIndex(
    (event) => event.payload?.$case === 'statusUpdate' && event.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED,
  );
  check(
    'deltas arrive as chunks of one streamed artifact before the task completes',
    chunks.length >= 2 &&
      chunks.map(({ event }) => chunkText(event)).join('') === 'tick 1tick 2tick 3' &&
      chunks[0].event.value.append === false &&
      chunks.slice(1).every(({ event }) => event.value.append === true) &&
      chunks.at(-1).event.value.lastChunk === true &&
      doneAt > chunks.at(-1).at,
    show(ticking.map((event) => event.payload?.$case)),
  );

  // --- Subscribe to a running task: the current task first; cancelling it ends the stream.
  const sleeper = await startSlow(client);
  const seen = [];
  let firstSeen;
  const gotFirst = new Promise((resolve) => {
    firstSeen = resolve;
  });
  const follower = (async () => {
    for await (const event of client.resubscribeTask(subscribeRequest(sleeper.id), callOptions())) {
      seen.push(event);
      firstSeen();
    }
  })();
  follower.catch(() => firstSeen());
  await within('SubscribeToTask (first event)', gotFirst);
  const stop = await errorOf(within('CancelTask', client.cancelTask(cancelRequest(sleeper.id), callOptions())));
  const followed = await errorOf(within('SubscribeToTask (end)', follower, 15_000));
  check(
    'subscribe ends after the cancellation',
    followed === null && stop === null,
    `${describeError(followed)}; cancel: ${describeError(stop)}`,
  );
  const head = seen[0]?.payload;
  check(
    'subscribe starts with the current task',
    head?.$case === 'task' && head.value.id === sleeper.id && running(head.value.status?.state),
    show(seen[0]),
  );
  const tail = seen.at(-1)?.payload;
  check(
    'subscribe ends with the cancellation',
    seen.length > 1 &&
      tail?.$case === 'statusUpdate' &&
      tail.value.taskId === sleeper.id &&
      tail.value.status?.state === TaskState.TASK_STATE_CANCELED,
    show(seen.map((event) => event.payload?.$case)),
  );
  const ended = await errorOf(
    collect(client.resubscribeTask(subscribeRequest(sleeper.id), callOptions()), 'SubscribeToTask'),
  );
  check(
    'subscribe to an ended task is UnsupportedOperationError',
    isA2aError(ended, 'UnsupportedOperationError', 'UNSUPPORTED_OPERATION', -32004, 400),
    describeError(ended),
  );

  // --- A message for a task that has ended.
  const followUp = await errorOf(
    within('SendMessage', client.sendMessage(sendRequest({ ...message('again'), taskId: sent.id }), callOptions())),
  );
  check(
    'a message for an ended task is UnsupportedOperationError',
    isA2aError(followUp, 'UnsupportedOperationError', 'UNSUPPORTED_OPERATION', -32004, 400),
    describeError(followUp),
  );

  // --- Unknown task ids.
  const unknown = randomUUID();
  const getUnknown = await errorOf(within('GetTask', client.getTask(getRequest(unknown), callOptions())));
  check(
    'get of an unknown task is TaskNotFoundError',
    isA2aError(getUnknown, 'TaskNotFoundError', 'TASK_NOT_FOUND', -32001, 404),
    describeError(getUnknown),
  );
  const cancelUnknown = await errorOf(within('CancelTask', client.cancelTask(cancelRequest(unknown), callOptions())));
  check(
    'cancel of an unknown task is TaskNotFoundError',
    isA2aError(cancelUnknown, 'TaskNotFoundError', 'TASK_NOT_FOUND', -32001, 404),
    describeError(cancelUnknown),
  );
  const subscribeUnknown = await errorOf(
    collect(client.resubscribeTask(subscribeRequest(unknown), callOptions()), 'SubscribeToTask'),
  );
  check(
    'subscribe to an unknown task is TaskNotFoundError',
    isA2aError(subscribeUnknown, 'TaskNotFoundError', 'TASK_NOT_FOUND', -32001, 404),
    describeError(subscribeUnknown),
  );

  // --- Everything went through the binding's endpoint, none elsewhere.
  const stray = fetched.filter((url) => url !== endpoint && !url.startsWith(`${endpoint}/`));
  check(
    "every call went to the binding's URL",
    fetched.length > 0 && stray.length === 0,
    `${fetched.length} requests; elsewhere: ${show(stray)}`,
  );
}

try {
  await main();
} catch (error) {
  check('the run completes', false, describeError(error));
}
console.log(`js-sdk ${BINDING}: ${failures === 0 ? `ok (${passes} checks)` : `${failures} failed`}`);
process.exit(failures ? 1 : 0);
