"""
One signalrcore connection driven by a node:test file: the hub URL, a bearer token, the protocol
('json' or 'messagepack') and the event to listen to come as arguments; commands come on stdin, one a
line ('invoke <method>', 'stop'); everything the client sees goes to stdout as one JSON object a line
(the assertions are in the node test). signalrcore's own logs go to stderr.
"""
import json
import logging
import sys
import threading

from signalrcore.hub_connection_builder import HubConnectionBuilder
from signalrcore.types import HubProtocolEncoding

url, token, protocol, event = sys.argv[1:5]
lock = threading.Lock()


def say(**fields):
    with lock:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


builder = (
    HubConnectionBuilder()
    .with_url(url, options={"access_token_factory": lambda: token})
    .configure_logging(logging.ERROR)
)
if protocol == "messagepack":
    # The client picks MessagePack from negotiate's transferFormats (Binary).
    builder = builder.with_hub_protocol(HubProtocolEncoding.binary)
connection = builder.build()

connection.on_open(lambda: say(event="open", protocol=connection.protocol.protocol, version=connection.protocol.version))
connection.on_close(lambda: say(event="close"))
connection.on_error(lambda m: say(event="error", invocationId=getattr(m, "invocation_id", None), error=getattr(m, "error", str(m))))
connection.on(event, lambda args: say(event="received", target=event, arguments=args))
connection.start()

for line in sys.stdin:
    command = line.split()
    if command[:1] == ["invoke"]:
        connection.invoke(command[1], [], invocation_id="python-1")
        say(event="invoked", invocationId="python-1")
    elif command[:1] == ["stop"]:
        break
connection.stop()
say(event="stopped")
