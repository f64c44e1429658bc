// The peer for bench/jobs: BullMQ job schedulers (the successor of its
// repeatable jobs) on Debian's redis-server, the pick of many Node users.
//   node bullmq.js setup PORT N EVERY
//       N schedulers, scheduler i firing at second (i % EVERY) of every
//       EVERY seconds -- the same timetable chime's --bench-jobs registers
//   node bullmq.js worker PORT OUT FROM_MS TO_MS
//       processes jobs until TO_MS + 3 s; writes to OUT the lateness (ms,
//       processedOn - the fire time) of every run whose fire time is in
//       [FROM_MS, TO_MS)
const fs = require('fs');
const { Queue, Worker } = require('bullmq');

const [mode, port] = process.argv.slice(2, 4);
const connection = { host: '127.0.0.1', port: Number(port) };

async function setup(n, every) {
  const q = new Queue('bench', { connection });
  for (let i = 0; i < n; i += 500) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 500); j++) {
      const id = 'bench-' + String(j).padStart(5, '0');
      batch.push(q.upsertJobScheduler(id, { pattern: `${j % every}/${every} * * * * *` },
        { name: id, opts: { removeOnComplete: true, removeOnFail: true } }));
    }
    await Promise.all(batch);
  }
  await q.close();
}

async function worker(out, from, to) {
  const late = [];
  const w = new Worker('bench', async (job) => {
    const fire = job.opts.prevMillis;
    if (fire >= from && fire < to) late.push(job.processedOn - fire);
  }, { connection, concurrency: 100 });
  await new Promise((r) => setTimeout(r, Math.max(0, to + 3000 - Date.now())));
  await w.close();
  fs.writeFileSync(out, JSON.stringify(late));
}

(async () => {
  if (mode === 'setup') await setup(Number(process.argv[4]), Number(process.argv[5]));
  else if (mode === 'worker') await worker(process.argv[4], Number(process.argv[5]), Number(process.argv[6]));
  else throw new Error('usage: bullmq.js setup PORT N EVERY | worker PORT OUT FROM_MS TO_MS');
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
