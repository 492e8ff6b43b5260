// An official @a2a-js/sdk echo agent on loopback, as a peer for Accord's A2A client.
//
// Usage: node a2a_js_server.mjs [PORT]   (or PORT in the environment; 0 or nothing = a free port)
//
// ESM ignores NODE_PATH: run this file from a folder whose node_modules holds @a2a-js/sdk and
// express (scripts/interop-a2a-peers copies it into its own prefix). Serves the card at
// /.well-known/agent-card.json, JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest. Each message
// becomes a task: submitted, working, an artifact "echo: <text>", completed, with a short pause
// before each step so that a subscription or a cancellation right after a returnImmediately send
// finds the task running (A2A_PEER_PAUSE_MS in the environment sets it; the load harness sets 0).
// A message whose text starts with "slow" pauses 10 s before each step instead: a task to cancel
// (scripts/interop-a2a-front).
// Prints
// "a2a-js-peer listening on http://127.0.0.1:<port>" once it accepts connections.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';

const port = Number(process.argv[2] ?? process.env.PORT ?? 0);

const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
const statusUpdate = (taskId, contextId, state) => ({
  kind: 'statusUpdate',
  data: { taskId, contextId, status: status(state), metadata: undefined },
});
const textOf = (message) =>
  (message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');

const PAUSE_MS = Number(process.env.A2A_PEER_PAUSE_MS ?? 100);
const SLOW_MS = 10_000;
const pause = (ms = PAUSE_MS) => new Promise((resolve) => setTimeout(resolve, ms));

// The executor must publish the task (or a message) before any update.
class EchoExecutor {
  contexts = new Map(); // running task id -> context id
  canceled = new Set();

  async execute(context, bus) {
    const { taskId, contextId } = context;
    this.contexts.set(taskId, contextId);
    if (!context.task) {
      bus.publish({
        kind: 'task',
        data: {
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [context.userMessage],
          metadata: undefined,
        },
      });
    }
    // Each step first pauses, then stops if the task was canceled meanwhile.
    const ms = /^slow\b/.test(textOf(context.userMessage)) ? SLOW_MS : PAUSE_MS;
    const step = async () => {
      await pause(ms);
      return !this.canceled.has(taskId);
    };
    if (!(await step())) return;
    bus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_WORKING));
    if (!(await step())) return;
    bus.publish({
      kind: 'artifactUpdate',
      data: {
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: 'echo',
          description: '',
          parts: [
            { content: { $case: 'text', value: 'echo: ' + textOf(context.userMessage) }, metadata: undefined, filename: '', mediaType: 'text/plain' },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      },
    });
    if (!(await step())) return;
    bus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    this.contexts.delete(taskId);
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.canceled.add(taskId);
    bus.publish(statusUpdate(taskId, this.contexts.get(taskId) ?? '', TaskState.TASK_STATE_CANCELED));
    this.contexts.delete(taskId);
    bus.finished();
  }
}

const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'a2a-js-peer',
    description: 'Echo agent on the official @a2a-js/sdk',
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'echo', name: 'echo', description: 'Echoes the message', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
    ],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`a2a-js-peer listening on ${base}`);
});
server.on('error', (error) => {
  console.error(`a2a-js-peer: ${error.message}`);
  process.exit(1);
});
// Role is imported so that a broken SDK install fails here, at start, rather than mid-run.
void Role.ROLE_AGENT;
