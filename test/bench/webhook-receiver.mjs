// The local receiver of bench 11, in a process of its own (the deliveries and the fetch loops
// both reach it over loopback, and it takes no CPU from either sender's event loop).
//   POST /hook    answers 204; counts each request, and each distinct `webhook-id` header
//   GET  /count   {requests, ids, lastAt}: lastAt the epoch ms of the request that brought the
//                 latest new webhook-id (for requests without one, of the latest request)
//   POST /reset   counts back to 0
// Prints {"ready":true,"url":...}.
import { createServer } from "node:http";

let requests = 0;
let ids = new Set();
let lastAt = 0;
const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/count") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ requests, ids: ids.size, lastAt }));
    return;
  }
  if (req.method === "POST" && req.url === "/reset") {
    requests = 0;
    ids = new Set();
    lastAt = 0;
    res.writeHead(204).end();
    return;
  }
  req.resume();
  req.on("end", () => {
    requests++;
    const id = req.headers["webhook-id"];
    if (typeof id === "string") {
      if (!ids.has(id)) {
        ids.add(id);
        lastAt = Date.now();
      }
    } else lastAt = Date.now();
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ ready: true, url: `http://127.0.0.1:${server.address().port}` })}\n`);
});
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
