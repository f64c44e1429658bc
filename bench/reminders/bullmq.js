// The peer for bench/reminders: BullMQ delayed jobs on Debian's redis-server,
// what a Node user would pick for "notify at this time".
//   node bullmq.js add PORT N T0_MS SPAN_MS
//       N delayed jobs, job i due at T0 + i * SPAN / N (the instants chime's
//       reminders are due at)
//   node bullmq.js worker PORT OUT N DEADLINE_MS
//       processes until N jobs ran or the deadline; writes to OUT
//       [lateness ms (processedOn - due), processedOn] per job
const fs = require('fs');
const { Queue, Worker } = require('bullmq');

const [mode, port] = process.argv.slice(2, 4);
const connection = { host: '127.0.0.1', port: Number(port) };

async function add(n, t0, span) {
  const q = new Queue('reminders', { connection });
  for (let i = 0; i < n; i += 1000) {
    const batch = [];
    const now = Date.now();
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      const due = t0 + Math.floor((j * span) / n);
      batch.push({ name: 'r', data: { due }, opts: { delay: Math.max(0, due - now), removeOnComplete: true,
                                                      removeOnFail: true } });
    }
    await q.addBulk(batch);
  }
  await q.close();
}

async function worker(out, n, deadline) {
  const got = [];
  let resolve;
  const done = new Promise((r) => { resolve = r; });
  const w = new Worker('reminders', async (job) => {
    const now = Date.now();
    got.push([now - job.data.due, now]);
    if (got.length >= n) resolve();
  }, { connection, concurrency: 100 });
  await Promise.race([done, new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
  await w.close(true);
  fs.writeFileSync(out, JSON.stringify(got));
}

(async () => {
  const a = process.argv.slice(4).map(Number);
  if (mode === 'add') await add(a[0], a[1], a[2]);
  else if (mode === 'worker') await worker(process.argv[4], a[1], a[2]);
  else throw new Error('usage: bullmq.js add PORT N T0 SPAN | worker PORT OUT N DEADLINE');
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
