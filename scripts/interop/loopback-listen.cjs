// Preloaded (node --require) into a server that listens on a bare port, on every interface (such
// as server-everything's `app.listen(PORT)`): a listen on a port alone listens on 127.0.0.1 only.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const bare = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (bare && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
