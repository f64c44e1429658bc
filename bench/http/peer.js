// The peer: Node's built-in http server answering the same health check.
const http = require('http');
const port = Number(process.argv[2] || 9099);
http.createServer((req, res) => {
  if (req.url === '/healthz') {
    const body = JSON.stringify({ status: 'ok' });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  } else {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":{"code":"not_found","message":"no such resource"}}');
  }
}).listen(port, '127.0.0.1');
