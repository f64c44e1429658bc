// lib.mjs -- the browser tests' harness: a real chime (the sanitizer build
// under tests/run.sh) on a throwaway SQLite database, Debian's chromium
// driven headless by playwright-core, API helpers, screenshots under
// build/screenshots/, and a failure on any console error or page error.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.CHIME_BIN || path.join(ROOT, 'build/san/chime');
const TMP = process.env.CHIME_TEST_TMP || os.tmpdir();
const SHOTS = path.join(ROOT, 'build/screenshots');
const BROWSER = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(p => fs.existsSync(p));

export class Server {
  constructor(args = []) { this.args = args; }

  async start() {
    const dir = fs.mkdtempSync(path.join(TMP, 'chime-web-'));
    this.dir = dir;
    this.logPath = path.join(dir, 'server.log');
    const log = fs.openSync(this.logPath, 'w');
    this.proc = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--db', `sqlite:${dir}/t.db`, '--password-ops', '1',
      '--password-mem', '8192', '--web-root', path.join(ROOT, 'web'), '--access-log', 'off', ...this.args],
    { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    for (let i = 0; i < 1500; i++) {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(this.log());
      if (m) { this.port = +m[1]; this.url = `http://127.0.0.1:${this.port}`; return this; }
      if (this.proc.exitCode !== null) throw new Error('chime exited:\n' + this.log());
      await sleep(20);
    }
    throw new Error('chime did not start:\n' + this.log());
  }

  log() { try { return fs.readFileSync(this.logPath, 'utf8'); } catch { return ''; } }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    const done = new Promise(r => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    const code = await Promise.race([done, sleep(30000).then(() => 'timeout')]);
    const log = this.log();
    for (const bad of ['AddressSanitizer', 'LeakSanitizer', 'runtime error:'])
      if (log.includes(bad)) throw new Error('sanitizer report in the server log:\n' + log.slice(-6000));
    if (code !== 0) throw new Error(`chime exited ${code}:\n` + log.slice(-3000));
  }

  async api(method, p, body, token, type) {
    const headers = {};
    if (token) headers.Authorization = 'Bearer ' + token;
    let data;
    if (body !== undefined) {
      data = typeof body === 'string' ? body : JSON.stringify(body);
      headers['Content-Type'] = type || 'application/json';
    }
    const res = await fetch(this.url + p, { method, headers, body: data });
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    return { status: res.status, json, text };
  }

  // A registered, signed-in user: {user, token, email, password}.
  async user(name) {
    const email = `${name.toLowerCase()}-${Math.random().toString(16).slice(2, 8)}@example.com`;
    const password = 'correct horse battery';
    const u = await this.api('POST', '/v1/users', { email, name, password });
    if (u.status !== 201) throw new Error('signup: ' + u.text);
    const s = await this.api('POST', '/v1/sessions', { email, password });
    return { user: u.json, token: s.json.token, session: s.json, email, password };
  }
}

const allPages = [];
export const sleep = ms => new Promise(r => setTimeout(r, ms));

export async function launch() {
  if (!BROWSER) throw new Error('no chromium: run scripts/deps.sh test');
  return chromium.launch({ executablePath: BROWSER, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

// A browser context with its own storage, its page, and the console errors
// it collected (checked by finish()).
export async function context(browser, server, { tz = 'UTC', session, viewport } = {}) {
  const ctx = await browser.newContext({ timezoneId: tz, viewport: viewport || { width: 1280, height: 860 }, baseURL: server.url });
  if (session) {
    await ctx.addInitScript(([s, zone]) => {
      if (!localStorage.getItem('chime.session')) localStorage.setItem('chime.session', s);
      if (!localStorage.getItem('chime.tz')) localStorage.setItem('chime.tz', zone);
    }, [JSON.stringify(session), tz]);
  }
  const page = await ctx.newPage();
  allPages.push(page);
  page.errors = [];
  page.on('console', m => { if (m.type() === 'error') page.errors.push(`console: ${m.text()} ${(m.location() || {}).url || ''}`); });
  page.on('pageerror', e => page.errors.push('pageerror: ' + e.message));
  return { ctx, page };
}

export async function shot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: false });
}

export function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

export function noErrors(...pages) {
  const errs = pages.flatMap(p => p.errors || []);
  if (errs.length) throw new Error('browser errors:\n' + errs.join('\n'));
}

// Runs one test file's body with a server and a browser; prints PASS or
// the failure and the server's last log lines; exit code for tests/run.sh.
export async function run(name, body, { args = [] } = {}) {
  const t0 = Date.now();
  const server = new Server(args);
  let browser, failed = null;
  try {
    await server.start();
    browser = await launch();
    await body({ server, browser });
  } catch (e) {
    failed = e;
    for (const [i, p] of allPages.entries()) {
      try { await shot(p, `FAILED-${name}-${i}`); } catch { /* closed */ }
    }
  }
  try { if (browser) await browser.close(); } catch { /* already gone */ }
  try { await server.stop(); } catch (e) { failed = failed || e; }
  if (failed) {
    console.error(`FAIL ${name}: ${failed.stack || failed}`);
    for (const p of allPages) if (p.errors.length) console.error('---- browser errors ----\n' + p.errors.join('\n'));
    console.error('---- server log (last lines) ----\n' + server.log().split('\n').slice(-60).join('\n'));
    process.exit(1);
  }
  if (server.dir) fs.rmSync(server.dir, { recursive: true, force: true });
  console.log(`PASS ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  process.exit(0);
}

// Two-digit helpers for wall times.
export const pad = n => String(n).padStart(2, '0');

// Creates a 15-minute event starting about 68 s from now (whole seconds,
// UTC) with a push reminder a minute before it, so the reminder is due in
// about 8 s. Returns the due time in ms.
export async function pushReminderSoon(server, token, summary) {
  const start = new Date(Date.now() + 68000);
  start.setUTCMilliseconds(0);
  const end = new Date(start.getTime() + 15 * 60000);
  const ev = await server.api('POST', '/v1/events', {
    summary,
    start: { date_time: start.toISOString().replace('.000', ''), time_zone: 'UTC' },
    end: { date_time: end.toISOString().replace('.000', ''), time_zone: 'UTC' },
    reminders: [{ method: 'push', minutes_before: 1 }],
  }, token);
  assert(ev.status === 201, ev.text);
  return start.getTime() - 60000;
}
