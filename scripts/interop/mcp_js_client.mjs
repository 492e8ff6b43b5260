// The official JavaScript A2A SDK client (@a2a-js/sdk) calling server-everything's tools behind
// `accord serve --config` (server-everything on stdio; scripts/interop-mcp runs it):
//
// - echo as a task: sent to return at once, then read with GetTask until it completes with the
//   tool's text as its output;
// - trigger-long-running-operation on SendStreamingMessage: the server's progress notifications
//   arrive as `working` status updates with a message, before the `completed` one;
// - get-tiny-image: its image is a file part of the task's artifacts, media type image/png,
//   holding the PNG's bytes.
//
// Usage: node mcp_js_client.mjs BASE_URL
// Prints one "PASS everything-stdio-js name" / "FAIL everything-stdio-js name: detail" line per
// check and exits non-zero on any failure. Every call has its own deadline and the whole run a
// hard one, so it never hangs. The SDK is imported by bare name: run this file from a folder
// under the npm prefix whose node_modules holds @a2a-js/sdk.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const BASE = process.argv[2];
if (!BASE) {
  console.error('usage: node mcp_js_client.mjs BASE_URL');
  process.exit(2);
}
const BASE_URL = BASE.endsWith('/') ? BASE : `${BASE}/`;
const LABEL = 'everything-stdio-js';
const OVERALL_MS = 90_000;
const CALL_MS = 30_000;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let failures = 0;

function check(name, ok, detail = '') {
  if (!ok) failures += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${LABEL} ${name}${!ok && detail ? `: ${detail}`.slice(0, 1500) : ''}`);
}

// The hard overall deadline: whatever is pending, the run ends with a failure.
setTimeout(() => {
  console.log(`FAIL ${LABEL} the run ends in time: still running after ${OVERALL_MS / 1000} s`);
  process.exit(1);
}, OVERALL_MS).unref();

const show = (value) =>
  JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? `<${v.length} bytes>` : v));
const stateName = (state) => TaskState[state] ?? String(state);
const describeError = (error) => (error ? `${error.name}: ${error.message}` : 'no error');

/** Runs a promise within `ms`. */
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

// Requests are built complete, as the SDK's (ts-proto) types declare them.
const message = (skill, data) => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: { skillId: skill },
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
const callOptions = () => ({ signal: AbortSignal.timeout(CALL_MS) });

const isTask = (result) => result && typeof result === 'object' && 'status' in result && 'id' in result;
/** The tool's output: the data part of the task's `result` artifact. */
const outputOf = (task) => {
  const artifact = (task?.artifacts ?? []).find((a) => a.artifactId === 'result');
  const content = artifact?.parts?.find((part) => part.content?.$case === 'data')?.content;
  return content?.value;
};
const statusText = (status) =>
  (status?.message?.parts ?? [])
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join(' ')
    .trim();

async function echoAsTask(client) {
  const name = 'echo as a task: returned at once, then completed with the tool text (GetTask)';
  try {
    const sent = await within(
      'SendMessage (echo, returnImmediately)',
      client.sendMessage(sendRequest(message('echo', { message: 'hello from a2a-js' }), true), callOptions()),
    );
    if (!isTask(sent)) {
      check(name, false, `not a task: ${show(sent)}`);
      return;
    }
    let task = sent;
    const until = Date.now() + CALL_MS;
    while (task.status?.state !== TaskState.TASK_STATE_COMPLETED && Date.now() < until) {
      if (task.status?.state === TaskState.TASK_STATE_FAILED) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
      task = await within('GetTask', client.getTask({ tenant: '', id: sent.id, historyLength: undefined }, callOptions()));
    }
    const output = outputOf(task);
    check(
      name,
      task.id === sent.id && task.status?.state === TaskState.TASK_STATE_COMPLETED && output?.text === 'Echo: hello from a2a-js',
      `state ${stateName(task.status?.state)}, output ${show(output)}`,
    );
  } catch (error) {
    check(name, false, describeError(error));
  }
}

async function progressOnStream(client) {
  const name = 'trigger-long-running-operation on sendMessageStream: working updates with a message before completed';
  const order = [];
  const texts = [];
  try {
    const stream = client.sendMessageStream(
      sendRequest(message('trigger-long-running-operation', { duration: 2, steps: 4 })),
      callOptions(),
    );
    await within(
      'SendStreamingMessage',
      (async () => {
        for await (const event of stream) {
          const payload = event.payload;
          if (payload?.$case === 'statusUpdate') {
            const status = payload.value.status;
            if (status?.state === TaskState.TASK_STATE_WORKING && statusText(status)) {
              order.push('progress');
              texts.push(statusText(status));
            } else {
              order.push(stateName(status?.state));
            }
          } else {
            order.push(payload?.$case ?? 'nothing');
          }
        }
      })(),
    );
    const done = order.indexOf('TASK_STATE_COMPLETED');
    const firstProgress = order.indexOf('progress');
    check(
      name,
      done > 0 && firstProgress >= 0 && firstProgress < done && texts.length >= 2,
      `order ${show(order)}, messages ${show(texts)}`,
    );
    check(
      'the progress messages say how far it got (progress/total)',
      texts.some((text) => text.includes('4')) && texts.at(-1) !== texts[0],
      show(texts),
    );
  } catch (error) {
    check(name, false, `${describeError(error)}; order so far ${show(order)}`);
  }
}

async function tinyImage(client) {
  const name = "get-tiny-image: its result is a file part with mediaType image/png holding the PNG's bytes";
  try {
    const task = await within(
      'SendMessage (get-tiny-image)',
      client.sendMessage(sendRequest(message('get-tiny-image', {})), callOptions()),
    );
    const files = (task?.artifacts ?? [])
      .flatMap((artifact) => artifact.parts ?? [])
      .filter((part) => part.content?.$case === 'raw');
    const image = files[0];
    const bytes = image ? Buffer.from(image.content.value) : Buffer.alloc(0);
    check(
      name,
      isTask(task) &&
        task.status?.state === TaskState.TASK_STATE_COMPLETED &&
        image?.mediaType === 'image/png' &&
        bytes.length > PNG_MAGIC.length &&
        bytes.subarray(0, PNG_MAGIC.length).equals(PNG_MAGIC),
      `state ${stateName(task?.status?.state)}, artifacts ${show(task?.artifacts)}`,
    );
  } catch (error) {
    check(name, false, describeError(error));
  }
}

async function main() {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({})],
      preferredTransports: ['JSONRPC'],
    }),
  );
  const client = await within('fetching the agent card', factory.createFromUrl(BASE_URL));
  await echoAsTask(client);
  await progressOnStream(client);
  await tinyImage(client);
}

main()
  .catch((error) => check('the client runs to the end', false, describeError(error)))
  .finally(() => process.exit(failures ? 1 : 0));
