// The webhook receiver for bench/reminders: takes chime's signed POSTs and
// records, per delivery id, when it first arrived and how late that was
// (arrival minus the payload's "due"); counts repeats of an id.
//   node receiver.js PORT OUT
// Prints "listening" once bound. GET /count answers {"unique":N,"repeats":M};
// on SIGTERM it writes OUT: {"repeats":M,"got":[[lateness ms, arrival ms], ...]}
// and exits.
const http = require('http');
const fs = require('fs');

const [port, out] = process.argv.slice(2);
const seen = new Map();
let repeats = 0;

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ unique: seen.size, repeats }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const id = req.headers['x-chime-delivery'];
    if (seen.has(id)) {
      repeats++;
    } else {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      seen.set(id, [now - Date.parse(body.due), now]);
    }
    res.statusCode = 204;
    res.end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(port), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => {
  fs.writeFileSync(out, JSON.stringify({ repeats, got: Array.from(seen.values()) }));
  process.exit(0);
});
