"""The `quote` skill as a plain HTTP service (Python standard library only).

Accord POSTs the validated input JSON to /quote and takes the JSON answer as the skill's output.
Run: python3 quote_service.py [PORT]   (0 or nothing: any free port; the first line says which)
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PRICES = {"tea": 4, "coffee": 5, "cocoa": 6}


class Quote(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/quote":
            return self.answer(404, {"error": "no such path"})
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        item = body["item"]
        if item not in PRICES:
            # A 4xx is the caller's mistake: the task is rejected with this message.
            return self.answer(422, {"message": f"{item} is not sold here"})
        quantity = int(body.get("quantity", 1))
        # Accord-Task-Id and Accord-Owner say which task and which caller (a pseudonym).
        self.answer(200, {"item": item, "quantity": quantity, "price": PRICES[item] * quantity,
                          "task": self.headers.get("accord-task-id")})

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Quote)
    print(f"quote service on {server.server_address[1]}", flush=True)
    server.serve_forever()
