// The bridge's page in a real browser (docs/bridge.md, "Tests"): Playwright (playwright-core)
// driving Debian's chromium headless against a real engine and a real backscroll-bridge.
//
//   node tests/browser/bridge.spec.mjs BIN_DIR ARTIFACT_DIR
//
// Cases: type a command as controller and see its output; reload and see the whole screen at
// once (a snapshot, not a replay); cut the socket and see the reconnect resume with what was
// printed meanwhile; two tabs, a controller and a viewer. Screenshots of each step go to
// ARTIFACT_DIR. Exits 0 when every case passed, 1 otherwise (with the reason).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const [binDir, artifacts] = process.argv.slice(2);
if (!binDir || !artifacts) {
  console.error('usage: node bridge.spec.mjs BIN_DIR ARTIFACT_DIR');
  process.exit(2);
}
const CHROMIUM = process.env.BACKSCROLL_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: run .ci/setup (it installs Debian's chromium)`);
  process.exit(1);
}
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch {
  console.error('playwright-core is missing: run .ci/setup (npm ci in tests/browser)');
  process.exit(1);
}
mkdirSync(artifacts, { recursive: true });

const root = mkdtempSync(path.join(tmpdir(), 'backscroll-browser-'));
const env = { ...process.env, BACKSCROLL_RUNTIME_DIR: path.join(root, 'rt'), BACKSCROLL_HOME: path.join(root, 'home') };
const cli = (...args) => execFileSync(path.join(binDir, 'backscroll'), ['--no-autostart', ...args], { env }).toString();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, check, timeout = 20000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

let engine, bridge, browser;
const failures = [];

async function run(name, body) {
  try {
    await body();
    console.log(`ok ${name}`);
  } catch (e) {
    failures.push(name);
    console.log(`FAILED ${name}: ${e.stack || e}`);
  }
}

// The text xterm.js draws in the page (its DOM renderer's rows).
const screenText = (page) => page.evaluate(() => document.querySelector('.xterm-rows')?.innerText ?? '');
const sessionState = (page) => page.evaluate(() => window.backscroll?.session?.state);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, `${name}.png`) });

try {
  mkdirSync(env.BACKSCROLL_HOME, { recursive: true });
  const log = openSync(path.join(root, 'engine.log'), 'w');
  engine = spawn(path.join(binDir, 'backscrolld'), [], { env, stdio: ['ignore', log, log] });
  await until('the engine', () => { try { cli('list'); return true; } catch { return false; } });
  cli('spawn', 'sh', '--', 'bash', '--norc', '--noprofile', '-i');
  cli('send', 'sh', 'PS1="$ "; clear');

  bridge = spawn(path.join(binDir, 'backscroll-bridge'), ['--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const firstLine = await new Promise((resolve, reject) => {
    let out = '';
    bridge.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    bridge.on('exit', (code) => reject(new Error(`backscroll-bridge exited with ${code}`)));
  });
  const base = firstLine.replace('listening on ', '').replace(/\/$/, '');
  const token = readFileSync(path.join(env.BACKSCROLL_HOME, 'bridge.token'), 'utf8').trim();

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1000, height: 640 } });
  const controller = await context.newPage();
  controller.on('pageerror', (e) => console.log(`page error: ${e}`));

  await run('a controller types a command and sees its output', async () => {
    await controller.goto(`${base}/?actor=sh&role=controller#token=${token}`);
    await until('the controller to be live', async () => (await sessionState(controller)) === 'live');
    if ((await controller.evaluate(() => location.hash)) !== '') throw new Error('the token stayed in the address bar');
    await controller.click('#terminal');
    await controller.keyboard.type('echo browser-$((6*7))');
    await controller.keyboard.press('Enter');
    await until('the output in the page', async () => (await screenText(controller)).includes('browser-42'));
    await shot(controller, '1-typed');
  });

  await run('a reload shows the whole screen at once', async () => {
    await controller.reload();
    await until('live again', async () => (await sessionState(controller)) === 'live');
    const how = await controller.evaluate(() => window.backscroll.session.lastCatchUp);
    if (how !== 'snapshot') throw new Error(`a fresh page caught up by ${how}, not a snapshot`);
    const text = await screenText(controller);
    if (!text.includes('browser-42') || !text.includes('echo browser-$((6*7))')) {
      throw new Error(`the screen after the reload misses the earlier output:\n${text}`);
    }
    await shot(controller, '2-reloaded');
  });

  await run('a cut socket reconnects and resumes with what was printed meanwhile', async () => {
    await controller.click('#terminal');
    await controller.keyboard.type('echo before-$((2*2))-cut');
    await controller.keyboard.press('Enter');
    await until('the output before the cut', async () => (await screenText(controller)).includes('before-4-cut'));
    await controller.evaluate(() => window.backscroll.session.socket.close());
    cli('send', 'sh', 'echo while-$((1+1))-away');
    await until('the output printed while away', async () => (await screenText(controller)).includes('while-2-away'));
    await until('live again', async () => (await sessionState(controller)) === 'live');
    const how = await controller.evaluate(() => window.backscroll.session.lastCatchUp);
    if (how !== 'resume') throw new Error(`the reconnect caught up by ${how}, not a resume`);
    const text = await screenText(controller);
    const seen = text.split('before-4-cut').length - 1;
    if (seen !== 1) throw new Error(`the output before the cut shows ${seen} times after the resume:\n${text}`);
    await shot(controller, '3-resumed');
  });

  await run('two tabs: the viewer sees what the controller types and cannot type', async () => {
    const viewer = await context.newPage();
    await viewer.goto(`${base}/?actor=sh&role=viewer`);  // the token is kept in the browser now
    await until('the viewer to be live', async () => (await sessionState(viewer)) === 'live');
    await controller.bringToFront();
    await controller.click('#terminal');
    await controller.keyboard.type('echo two-$((3*3))-tabs');
    await controller.keyboard.press('Enter');
    await until('the viewer to see it', async () => (await screenText(viewer)).includes('two-9-tabs'));
    await viewer.bringToFront();
    await viewer.click('#terminal');
    await viewer.keyboard.type('echo from-the-viewer');
    await viewer.keyboard.press('Enter');
    await sleep(500);
    if (cli('history', 'sh', '--from', '0').includes('from-the-viewer')) throw new Error("the viewer's typing reached the actor");
    await shot(controller, '4-controller');
    await shot(viewer, '4-viewer');
  });

  await run('a phone-sized page shows the screen and the actor list with agent status', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await phone.newPage();
    await page.goto(`${base}/?actor=sh&role=viewer#token=${token}`);
    await until('the phone to be live', async () => (await sessionState(page)) === 'live');
    if (!(await screenText(page)).includes('two-9-tabs')) throw new Error('the phone does not show the screen');
    if (await page.locator('#ended').isVisible()) throw new Error('a live page shows the ended notice');
    await page.click('#actors-toggle');
    await until('the actor list', async () => (await page.locator('#actor-list li').count()) > 0);
    const cols = await page.evaluate(() => window.backscroll.term.cols);
    if (cols < 20) throw new Error(`the terminal was fitted to ${cols} columns`);
    await shot(page, '5-phone');
    await phone.close();
  });
} catch (e) {
  failures.push('setup');
  console.log(`FAILED setup: ${e.stack || e}`);
} finally {
  await browser?.close();
  bridge?.kill('SIGTERM');
  try { cli('shutdown'); } catch {}
  await new Promise((r) => (engine && engine.exitCode === null ? engine.on('exit', r) : r()));
  if (failures.length && existsSync(path.join(root, 'engine.log'))) {
    console.log(`----- engine log -----\n${readFileSync(path.join(root, 'engine.log'), 'utf8')}`);
  }
  rmSync(root, { recursive: true, force: true });
}
console.log(failures.length ? `${failures.length} failed: ${failures.join(', ')}` : 'all passed');
process.exit(failures.length ? 1 : 0);
