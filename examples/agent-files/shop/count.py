"""The `count` skill as a command: the input JSON on stdin, the output JSON on stdout."""
import json
import sys

body = json.load(sys.stdin)
print(json.dumps({"words": len(body["text"].split())}))
