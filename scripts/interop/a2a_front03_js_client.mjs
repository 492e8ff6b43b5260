// The official JavaScript A2A SDK 0.3 client (@a2a-js/sdk 0.3.x) against an Accord agent that
// fronts remote A2A agents ([[a2a]] entries of its agent file), in the 0.3 dialect: a blocking
// message/send to each skill named, whose task must carry the remote agent's artifact
// "echo: <text>".
//
// Usage: node a2a_front03_js_client.mjs ACCORD_URL JSONRPC|HTTP+JSON SKILL...
// The client reads the card's 0.3 members and picks the 0.3 interface of that transport. Prints
// one PASS/FAIL line per skill and exits non-zero on any failure. Run it from a folder whose
// node_modules holds @a2a-js/sdk 0.3 (scripts/interop-a2a-front copies it into that prefix).
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

const [url, transport, ...skills] = process.argv.slice(2);
let failures = 0;

function check(name, ok, detail = '') {
  if (!ok) failures += 1;
  console.log(`${ok ? 'PASS' : 'FAIL'} js-sdk-0.3 ${transport} ${name}${!ok && detail ? `: ${detail.slice(0, 500)}` : ''}`);
}

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
    preferredTransports: [transport],
  }),
);
const client = await factory.createFromUrl(url);
for (const skill of skills) {
  const text = `hello ${skill} over 0.3 ${transport} ${randomUUID().slice(0, 8)}`;
  const name = `-> ${skill}: the remote agent's echo comes back`;
  try {
    const task = await client.sendMessage({
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], metadata: { skillId: skill } },
      configuration: { blocking: true },
    });
    const echoes = (task.artifacts ?? []).map((a) => a.parts.map((p) => (p.kind === 'text' ? p.text : '')).join(''));
    check(name, task.kind === 'task' && task.status.state === 'completed' && echoes.includes(`echo: ${text}`), JSON.stringify(task));
  } catch (error) {
    check(name, false, `${error?.name}: ${error?.message}`);
  }
}
process.exit(failures ? 1 : 0);
