"""The official Python A2A SDK client against an Accord agent served over TLS, checked.

Usage: python tls_python_client.py BASE_URL BINDING   (BINDING: JSONRPC, HTTP+JSON or GRPC)

The environment names the PEM files of the test's PKI:
  INTEROP_TLS_CA           the authority that issued the server's certificate (and the clients')
  INTEROP_TLS_CLIENT_CERT  a client certificate whose subject `accord serve --tls-client-scopes`
  INTEROP_TLS_CLIENT_KEY   grants the scope of the demo's `slow` skill, and its key
  INTEROP_TLS_GRPC_MAIN    for GRPC: the agent's main port as host:port (gRPC is served there too,
                           beside the `--grpc-port` the card lists)
  INTEROP_TLS_CLIENT_AUTH  `required` when the server refuses a handshake without a client
                           certificate (`--tls-client-auth required`): every client presents the
                           certificate, and the client without one must be refused at the handshake

The HTTP bindings go through httpx with `verify=` an ssl context trusting the test CA, and
gRPC through grpcio with `grpc.ssl_channel_credentials(root_certificates=...)`. Each binding is
checked the same way: the card (https URLs, the mTLS scheme), SendMessage, GetTask, a stream;
then that the CA is really needed (without it the handshake fails on the server's certificate),
and that the mTLS principal's scope is the one `--tls-client-scopes` maps: the scoped skill is
refused without the client certificate and runs with it.
Prints one "PASS python-sdk BINDING name" / "FAIL python-sdk BINDING name: detail" line per check
(python-sdk-mtls when the client certificate is required) and exits non-zero on any failure.
"""
import asyncio
import os
import ssl
import sys

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, minimal_agent_card
from a2a.client.client_factory import ClientFactory
from a2a.helpers import new_text_message
from a2a.types import AgentCard, GetTaskRequest, Role, SendMessageRequest, TaskState

URL, BINDING = sys.argv[1].rstrip("/"), sys.argv[2]
CA = os.environ["INTEROP_TLS_CA"]
CLIENT_CERT = os.environ["INTEROP_TLS_CLIENT_CERT"]
CLIENT_KEY = os.environ["INTEROP_TLS_CLIENT_KEY"]
REQUIRED = os.environ.get("INTEROP_TLS_CLIENT_AUTH") == "required"
LABEL = "python-sdk-mtls" if REQUIRED else "python-sdk"
failures = 0


def check(name, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'} {LABEL} {BINDING} {name}" + (f": {detail}" if detail and not ok else ""), flush=True)


def message(text, skill=None):
    msg = new_text_message(text, role=Role.ROLE_USER)
    if skill:
        msg.metadata.update({"skillId": skill})
    return msg


def ssl_context(with_client_certificate=False):
    """Trusts the test CA only (not the system's roots), as a client of a private PKI would."""
    context = ssl.create_default_context(cafile=CA)
    if with_client_certificate:
        context.load_cert_chain(CLIENT_CERT, CLIENT_KEY)
    return context


def read(path):
    with open(path, "rb") as file:
        return file.read()


def grpc_credentials(with_client_certificate=False):
    import grpc  # the `grpc` extra of a2a-sdk

    if with_client_certificate:
        return grpc.ssl_channel_credentials(
            root_certificates=read(CA), private_key=read(CLIENT_KEY), certificate_chain=read(CLIENT_CERT)
        )
    return grpc.ssl_channel_credentials(root_certificates=read(CA))


async def fetch_card(verify):
    async with httpx.AsyncClient(verify=verify, timeout=10) as http:
        return await A2ACardResolver(http, URL).get_agent_card()


def config(streaming, with_client_certificate=REQUIRED):
    """A client configuration for BINDING: an httpx client of the test CA for the HTTP bindings,
    TLS channels for gRPC (the card's gRPC url is a host:port; the SDK leaves the channel to the
    caller)."""
    cfg = ClientConfig(streaming=streaming, supported_protocol_bindings=[BINDING])
    if BINDING == "GRPC":
        import grpc

        credentials = grpc_credentials(with_client_certificate)
        cfg.grpc_channel_factory = lambda target: grpc.aio.secure_channel(target, credentials)
    else:
        cfg.httpx_client = httpx.AsyncClient(verify=ssl_context(with_client_certificate), timeout=20)
    return cfg


async def close(client, cfg):
    await client.close()
    if cfg.httpx_client is not None:
        await cfg.httpx_client.aclose()


async def operations(client, where):
    """SendMessage (blocking), GetTask and a streaming send through `client`."""
    events = [ev async for ev in client.send_message(SendMessageRequest(message=message("hello over TLS")))]
    tasks = [ev.task for ev in events if ev.WhichOneof("payload") == "task"]
    task = tasks[0] if len(tasks) == 1 else None
    result = [a for a in task.artifacts if a.artifact_id == "result"] if task else []
    check(
        f"{where}SendMessage completes with the echo",
        task is not None
        and task.status.state == TaskState.TASK_STATE_COMPLETED
        and bool(result)
        and MessageToDict(result[0].parts[0].data).get("text") == "hello over TLS",
        str(events)[:600],
    )
    if task is None:
        return
    got = await client.get_task(GetTaskRequest(id=task.id, history_length=10))
    check(
        f"{where}GetTask returns the task with its history",
        got.id == task.id
        and got.status.state == TaskState.TASK_STATE_COMPLETED
        and any(m.role == Role.ROLE_USER for m in got.history),
        str(got)[:600],
    )


async def streaming(client, where):
    # The demo's `ticks` streams its deltas as chunks of one artifact, then completes.
    kinds, chunks, states = [], [], []
    async for ev in client.send_message(SendMessageRequest(message=message('{"count": 3, "interval_ms": 20}', "ticks"))):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "artifact_update" and ev.artifact_update.artifact.artifact_id == "stream":
            chunks.append("".join(part.text for part in ev.artifact_update.artifact.parts))
        if kind == "status_update":
            states.append(ev.status_update.status.state)
    check(
        f"{where}a stream starts with the task, carries the ticks and ends completed",
        kinds[:1] == ["task"] and "".join(chunks) == "tick 1tick 2tick 3" and states[-1:] == [TaskState.TASK_STATE_COMPLETED],
        f"{kinds} {chunks} {states}",
    )


async def scope_checks(where):
    """The demo's `slow` needs `demo:slow`, which only the SPIFFE client certificate holds."""
    slow = SendMessageRequest(message=message('{"seconds": 0}', "slow"))
    refused_name = (
        "a client without a certificate is refused at the handshake"
        if REQUIRED
        else "the scoped skill is refused without a client certificate"
    )
    cfg = config(False, with_client_certificate=False)
    anonymous = await client_for(cfg)
    try:
        events = [ev async for ev in anonymous.send_message(slow)]
        check(f"{where}{refused_name}", False, f"it ran: {str(events)[:300]}")
    except Exception as error:  # noqa: BLE001 - the check reports what came
        text = f"{error} {error.__cause__} {error.__cause__.__cause__ if error.__cause__ else ''}"
        if REQUIRED:
            # Refused at the handshake: TLS 1.3's certificate_required alert (grpcio reports
            # the connection it could not make as UNAVAILABLE).
            refused = "CERTIFICATE_REQUIRED" in text.upper() or (BINDING == "GRPC" and "UNAVAILABLE" in text)
        elif BINDING == "HTTP+JSON":
            # The SDK's REST transport reports the HTTP status only.
            refused = "403 Forbidden" in text
        else:
            # JSON-RPC and gRPC carry the server's message, naming the scope.
            refused = "scope 'demo:slow' required" in text
        check(f"{where}{refused_name}", refused, f"{type(error).__name__}: {text}")
    await close(anonymous, cfg)

    cfg = config(False, with_client_certificate=True)
    spiffe = await client_for(cfg)
    try:
        events = [ev async for ev in spiffe.send_message(slow)]
        tasks = [ev.task for ev in events if ev.WhichOneof("payload") == "task"]
        slept = [MessageToDict(a.parts[0].data) for t in tasks for a in t.artifacts if a.artifact_id == "result"]
        check(
            f"{where}the scoped skill runs with the SPIFFE client certificate",
            len(tasks) == 1 and tasks[0].status.state == TaskState.TASK_STATE_COMPLETED and "slept" in (slept or [{}])[0],
            str(events)[:600],
        )
    except Exception as error:  # noqa: BLE001
        check(f"{where}the scoped skill runs with the SPIFFE client certificate", False, f"{type(error).__name__}: {error}")
    await close(spiffe, cfg)


CARD = None
MAIN_GRPC = False


async def client_for(cfg):
    if MAIN_GRPC:
        # gRPC is served on the main port too, though the card lists the --grpc-port: the card
        # with its gRPC interface moved there.
        card = AgentCard()
        card.CopyFrom(CARD)
        for interface in card.supported_interfaces:
            if interface.protocol_binding == "GRPC":
                interface.url = os.environ["INTEROP_TLS_GRPC_MAIN"]
        return ClientFactory(cfg).create(card)
    return ClientFactory(cfg).create(CARD)


async def main():
    global CARD, MAIN_GRPC
    # The card, over HTTPS, with the test CA.
    try:
        CARD = await fetch_card(ssl_context(REQUIRED))
    except Exception as error:  # noqa: BLE001
        check("the card is fetched over HTTPS with the test CA", False, f"{type(error).__name__}: {error}")
        return
    interfaces = [(i.protocol_binding, i.url) for i in CARD.supported_interfaces]
    http_urls = [url for binding, url in interfaces if binding != "GRPC"]
    check(
        "the card's URLs are https://",
        bool(http_urls) and all(url.startswith("https://") for url in http_urls),
        str(interfaces),
    )
    check("the card lists the binding", any(binding == BINDING for binding, _ in interfaces), str(interfaces))
    mtls = CARD.security_schemes.get("mtls") if "mtls" in CARD.security_schemes else None
    check(
        "the card declares the mTLS security scheme",
        mtls is not None and mtls.HasField("mtls_security_scheme"),
        str(dict(CARD.security_schemes)),
    )

    # Without the CA (the system's roots only) the server's certificate is not trusted.
    try:
        await fetch_card(True)
        check("without the test CA the card fetch fails on the certificate", False, "it was fetched")
    except Exception as error:  # noqa: BLE001
        text = f"{error} {error.__cause__}"
        check("without the test CA the card fetch fails on the certificate", "CERTIFICATE_VERIFY_FAILED" in text, text)

    targets = [""]
    if BINDING == "GRPC":
        targets = ["card's gRPC port: "] if REQUIRED else ["card's gRPC port: ", "main port: "]
        grpc_url = next((url for binding, url in interfaces if binding == "GRPC"), "")
        check("the card's gRPC url is a host:port", grpc_url.startswith("127.0.0.1:"), grpc_url)
    for where in targets:
        MAIN_GRPC = where == "main port: "
        cfg = config(False)
        client = await client_for(cfg)
        await operations(client, where)
        await close(client, cfg)
        cfg = config(True)
        client = await client_for(cfg)
        await streaming(client, where)
        await close(client, cfg)
        await scope_checks(where)
        if BINDING == "GRPC":
            await grpc_negative(where)


async def grpc_negative(where):
    """A plaintext channel and a TLS channel without the test CA both fail against the TLS port."""
    import grpc

    target = os.environ["INTEROP_TLS_GRPC_MAIN"] if MAIN_GRPC else next(
        url for binding, url in ((i.protocol_binding, i.url) for i in CARD.supported_interfaces) if binding == "GRPC"
    )
    for name, channel in (
        ("a plaintext channel", lambda: grpc.aio.insecure_channel(target)),
        ("a TLS channel without the test CA", lambda: grpc.aio.secure_channel(target, grpc.ssl_channel_credentials())),
    ):
        cfg = ClientConfig(streaming=False, supported_protocol_bindings=["GRPC"])
        cfg.grpc_channel_factory = lambda _target, make=channel: make()
        client = ClientFactory(cfg).create(minimal_agent_card(target, ["GRPC"]))
        try:
            events = await asyncio.wait_for(
                _collect(client.send_message(SendMessageRequest(message=message("should not arrive")))), timeout=15
            )
            check(f"{where}{name} is refused", False, f"answered: {str(events)[:300]}")
        except asyncio.TimeoutError:
            check(f"{where}{name} is refused", False, "no answer within 15 s")
        except Exception as error:  # noqa: BLE001
            text = f"{type(error).__name__}: {error} {error.__cause__}"
            check(f"{where}{name} is refused", "UNAVAILABLE" in text or "unavailable" in text.lower(), text)
        await client.close()


async def _collect(stream):
    return [ev async for ev in stream]


asyncio.run(main())
print(f"{LABEL} {BINDING}: {'ok' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
