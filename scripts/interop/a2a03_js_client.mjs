// The official JS A2A SDK 0.3 client (`@a2a-js/sdk` 0.3.x) against an Accord agent, in the 0.3
// dialect, over the transport named on the command line.
//
// Usage: node a2a03_js_client.mjs BASE_URL JSONRPC|HTTP+JSON
// The client reads the card's 0.3 members, picks the 0.3 interface of that transport, and drives
// send (blocking and not), stream, get, cancel and the errors. Prints one PASS/FAIL line per
// check and exits non-zero on any failure.
import { randomUUID } from 'node:crypto';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
  TaskNotCancelableError,
  TaskNotFoundError,
} from '@a2a-js/sdk/client';

const [url, transport] = process.argv.slice(2);
let failures = 0;

function check(name, ok, detail = '') {
  if (!ok) failures += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} js-sdk-0.3 ${transport} ${name}${!ok && detail ? `: ${detail}` : ''}`);
}

function message(skill, data) {
  return {
    kind: 'message',
    messageId: randomUUID(),
    role: 'user',
    parts: [{ kind: 'data', data }],
    metadata: { skillId: skill },
  };
}

async function main() {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
      preferredTransports: [transport],
    }),
  );
  const client = await factory.createFromUrl(url);

  // message/send, blocking.
  const sent = await client.sendMessage({ message: message('echo', { text: 'hello js 0.3' }), configuration: { blocking: true } });
  check('message/send completes the task', sent.kind === 'task' && sent.status.state === 'completed', JSON.stringify(sent));
  const part = sent.artifacts?.[0]?.parts?.[0];
  check('the result is a data part', part?.kind === 'data' && part.data.text === 'hello js 0.3', JSON.stringify(part));

  // tasks/get.
  const got = await client.getTask({ id: sent.id });
  check('tasks/get reads the task', got.id === sent.id && got.status.state === 'completed', JSON.stringify(got));

  // message/stream: the events end with a final status update.
  const events = [];
  for await (const event of client.sendMessageStream({ message: message('echo', { text: 'streamed' }) })) {
    events.push(event);
  }
  const last = events[events.length - 1];
  check(
    'message/stream ends on a final completed status update',
    last?.kind === 'status-update' && last.final === true && last.status.state === 'completed',
    JSON.stringify(events),
  );

  // A running task, then tasks/cancel.
  const slow = await client.sendMessage({ message: message('slow', { seconds: 30 }), configuration: { blocking: false } });
  check(
    'blocking: false returns at once',
    slow.kind === 'task' && ['submitted', 'working'].includes(slow.status.state),
    JSON.stringify(slow),
  );
  // A push config without an authentication scheme (0.3 allows an empty list): kept, and read
  // back without authentication.
  try {
    const hook = { id: 'hook-open', url: 'http://127.0.0.1:9/open', authentication: { schemes: [] } };
    await client.setTaskPushNotificationConfig({ taskId: slow.id, pushNotificationConfig: hook });
    const fetched = await client.getTaskPushNotificationConfig({ id: slow.id, pushNotificationConfigId: 'hook-open' });
    const config = fetched.pushNotificationConfig;
    check(
      'a push config without an authentication scheme is kept',
      config?.url === hook.url && (config.authentication === undefined || (config.authentication.schemes ?? []).length === 0),
      JSON.stringify(fetched),
    );
  } catch (error) {
    check('a push config without an authentication scheme is kept', false, String(error));
  }

  const canceled = await client.cancelTask({ id: slow.id });
  check('tasks/cancel cancels', canceled.status.state === 'canceled', JSON.stringify(canceled));

  // Errors.
  try {
    await client.getTask({ id: 'no-such-task' });
    check('an unknown task is TaskNotFoundError', false, 'no error');
  } catch (error) {
    const ok = error instanceof TaskNotFoundError || error?.code === -32001 || /-32001/.test(String(error?.message));
    check('an unknown task is TaskNotFoundError', ok, String(error));
  }
  try {
    await client.cancelTask({ id: slow.id });
    check('cancelling a canceled task is TaskNotCancelableError', false, 'no error');
  } catch (error) {
    const ok = error instanceof TaskNotCancelableError || error?.code === -32002 || /-32002/.test(String(error?.message));
    check('cancelling a canceled task is TaskNotCancelableError', ok, String(error));
  }

  // Errors of the streaming methods reach the client as the real error (on JSON-RPC inside the
  // event stream, on REST as the HTTP status and the error body).
  const notFound = (error) =>
    error instanceof TaskNotFoundError ||
    error?.cause?.errorResponse?.error?.code === -32001 ||
    /-32001/.test(String(error?.message));
  const streamError = async (events) => {
    try {
      for await (const _event of events) {
        // drained
      }
    } catch (error) {
      return error;
    }
    return null;
  };
  const followUp = { ...message('echo', { text: 'more' }), taskId: 'no-such-task' };
  let error = await streamError(client.sendMessageStream({ message: followUp }));
  check('message/stream on an unknown task is TaskNotFoundError', notFound(error), String(error));
  error = await streamError(client.resubscribeTask({ id: 'no-such-task' }));
  check('tasks/resubscribe on an unknown task is TaskNotFoundError', notFound(error), String(error));
}

try {
  await main();
} catch (error) {
  check('the client runs to the end', false, String(error?.stack ?? error));
}
console.log(`js-sdk-0.3 ${transport}: ${failures === 0 ? 'ok' : `${failures} failed`}`);
process.exit(failures ? 1 : 0);
