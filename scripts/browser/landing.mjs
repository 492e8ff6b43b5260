// Drives the landing page of a running `accord serve` (the demo agent) in headless Chromium:
// reads the card on the page, invokes `echo`, streams `ticks` and watches the events arrive, shows
// a refused input, starts a `slow` task, watches and cancels it, lists the tasks, reads the page
// without JavaScript, and checks that no step caused a console error or a CSP violation.
//
// Usage: node landing.mjs URL SCREENSHOT_DIR CHROMIUM_PATH
// Prints one PASS/FAIL line per step; exits 1 on the first failed step (with a screenshot of it).

import { chromium } from 'playwright-core';

const [url, shots, executablePath] = process.argv.slice(2);
if (!url || !shots || !executablePath) {
  console.error('usage: node landing.mjs URL SCREENSHOT_DIR CHROMIUM_PATH');
  process.exit(2);
}
const root = url.replace(/\/$/, '');

const browser = await chromium.launch({ executablePath, headless: true, chromiumSandbox: false });
const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(15000);

// Console errors, uncaught exceptions and CSP violations, checked at the end. A refused request
// the test provokes on purpose shows up as one console error ("Failed to load resource … 400"),
// which is expected.
const consoleErrors = [];
const pageErrors = [];
page.on('console', (message) => {
  if (message.type() === 'error') consoleErrors.push(message.text());
});
page.on('pageerror', (error) => pageErrors.push(String(error)));
await context.addInitScript(() => {
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (event) => {
    window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
  });
});

let number = 0;
async function step(name, body) {
  number += 1;
  const label = `${String(number).padStart(2, '0')}-${name}`;
  try {
    // A step may name the page its screenshot shows; by default, the main one.
    const shown = (await body(label)) || page;
    await shown.screenshot({ path: `${shots}/${label}.png`, fullPage: false });
    console.log(`PASS ${name}`);
  } catch (error) {
    console.log(`FAIL ${name}: ${error && error.message ? error.message.split('\n')[0] : error}`);
    try {
      await page.screenshot({ path: `${shots}/${label}-failed.png`, fullPage: true });
      console.log(`     screenshot: ${shots}/${label}-failed.png`);
    } catch (screenshotError) {
      // The page may be gone; the message above is what matters.
    }
    await browser.close();
    process.exit(1);
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const form = (skill) => page.locator(`form.try-form[data-skill="${skill}"]`);

await step('load-and-read-the-card', async () => {
  const response = await page.goto(`${root}/`);
  check(response && response.status() === 200, `GET / answered ${response && response.status()}`);
  check((response.headers()['content-security-policy'] || '').includes("default-src 'none'"), 'no CSP on the page');
  await page.waitForSelector('body[data-ready="yes"]');
  const card = await (await page.request.get(`${root}/.well-known/agent-card.json`)).json();
  const name = await page.locator('#agent-name').textContent();
  check(name === card.name, `the page names "${name}", the card "${card.name}"`);
  const version = await page.locator('#agent-version').textContent();
  check(version === card.version, `the page says version ${version}, the card ${card.version}`);
  for (const skill of card.skills) {
    check(await page.locator(`#skill-${skill.id}`).count() === 1, `skill ${skill.id} is not on the page`);
  }
  await page.locator('#card-raw summary').click();
  const raw = JSON.parse(await page.locator('#card-raw code').textContent());
  check(JSON.stringify(raw) === JSON.stringify(card), 'the raw card view differs from the served card');
  await page.locator('#card-raw summary').click();
});

await step('invoke-echo', async () => {
  const echo = form('echo');
  await echo.scrollIntoViewIfNeeded();
  await echo.locator('input[name="text"]').fill('hello from the browser');
  await echo.locator('button[data-action="invoke"]').click();
  await echo.locator('.result.ok code.output').waitFor();
  const output = JSON.parse(await echo.locator('code.output').textContent());
  check(output.text === 'hello from the browser', `echo answered ${JSON.stringify(output)}`);
});

await step('stream-ticks-live', async () => {
  const ticks = form('ticks');
  await ticks.scrollIntoViewIfNeeded();
  await ticks.locator('input[name="count"]').fill('5');
  // When each event row appears, stamped by the page's clock as it is added.
  await ticks.evaluate((element) => {
    window.__arrivals = [];
    new MutationObserver((mutations) => {
      for (const mutation of mutations) {
        for (const node of mutation.addedNodes) {
          if (node.tagName === 'LI') window.__arrivals.push([node.dataset.event, performance.now()]);
        }
      }
    }).observe(element, { childList: true, subtree: true });
  });
  await ticks.locator('button[data-action="stream"]').click();
  await ticks.locator('.result .status', { hasText: 'stream ended' }).waitFor();
  const status = await ticks.locator('.result .status').textContent();
  check(status.includes('succeeded'), `the stream ended with "${status}"`);
  const events = await ticks.locator('ol.events li').evaluateAll((items) => items.map((item) => item.dataset.event));
  check(events[0] === 'run-start' && events[events.length - 1] === 'run-end', `events: ${events.join(', ')}`);
  const deltas = events.filter((event) => event === 'delta').length;
  check(deltas === 5, `${deltas} deltas arrived, not 5 (${events.join(', ')})`);
  // Live, not buffered: the deltas were added at several distinct moments, in order, before the end.
  const arrivals = await page.evaluate(() => window.__arrivals);
  const deltaTimes = arrivals.filter(([event]) => event === 'delta').map(([, at]) => at);
  const moments = new Set(deltaTimes).size;
  check(moments >= 3, `the 5 deltas were added at ${moments} moment(s): the stream was not read live`);
  const end = arrivals.find(([event]) => event === 'run-end')[1];
  check(deltaTimes.every((at) => at <= end), 'a delta was shown after run-end');
});

await step('refused-input-is-shown', async () => {
  const ticks = form('ticks');
  await ticks.locator('input[name="count"]').fill('5000');
  await ticks.locator('button[data-action="stream"]').click();
  await ticks.locator('.result.error').waitFor();
  const text = await ticks.locator('.result').textContent();
  check(text.includes('HTTP 400') && text.includes('invalid_input'), `the error reads "${text}"`);
  check(text.includes('count'), `the error does not name the field: "${text}"`);
});

let taskId = null;
await step('start-and-watch-a-slow-task', async () => {
  const slow = form('slow');
  await slow.scrollIntoViewIfNeeded();
  await slow.locator('input[name="seconds"]').fill('30');
  await slow.locator('button[data-action="task"]').click();
  const card = page.locator('#task-cards .task-card').first();
  await card.waitFor();
  taskId = await card.getAttribute('data-task-id');
  check(taskId, 'the task card has no task id');
  // Watching starts by itself: the subscription replays the task's status.
  await card.locator('ol.events li[data-event="statusUpdate"]', { hasText: 'running' }).first().waitFor();
  check((await card.locator('.task-status .badge').textContent()) === 'running', 'the task is not running');
  check((await card.locator('button[data-action="watch"]').textContent()) === 'Stop watching', 'not watching');
  await card.scrollIntoViewIfNeeded();
});

await step('cancel-the-task', async () => {
  const card = page.locator(`#task-cards .task-card[data-task-id="${taskId}"]`);
  await card.locator('button[data-action="cancel"]').click();
  // The live subscription sees the cancellation, and then closes.
  await card.locator('ol.events li', { hasText: 'cancelled' }).first().waitFor();
  await card.locator('button[data-action="watch"]', { hasText: /^Watch$/ }).waitFor();
  check((await card.locator('.task-status .badge').textContent()) === 'cancelled', 'the badge does not say cancelled');
  // The server agrees, asked with the page's token (shown on request, never stored).
  await page.locator('details.token summary').click();
  await page.locator('details.token button', { hasText: 'Show token' }).click();
  const token = (await page.locator('#token-shown').textContent()).trim();
  check(/^[0-9a-f]{64}$/.test(token), 'the page token is not 64 hex digits');
  const task = await (await page.request.get(`${root}/tasks/${taskId}`, { headers: { 'Task-Access-Token': token } })).json();
  check(task.status === 'cancelled', `the server says ${task.status}`);
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
  check(!stored.includes(token) && !page.url().includes(token), 'the token left the page memory');
  await page.locator('details.token button', { hasText: 'Show token' }).click();
  await page.locator('details.token summary').click();
});

await step('list-my-tasks', async () => {
  await page.locator('#list-tasks').click();
  const row = page.locator(`#task-list tr[data-task-id="${taskId}"]`);
  await row.waitFor();
  check((await row.locator('.badge').textContent()) === 'cancelled', 'the listed task is not cancelled');
  const summary = await page.locator('#task-list .list-summary').textContent();
  check(summary.startsWith('1 task'), `the list says "${summary}"`);
  await page.locator('#tasks').scrollIntoViewIfNeeded();
});

await step('no-console-errors-or-csp-violations', async () => {
  const violations = await page.evaluate(() => window.__cspViolations);
  check(violations.length === 0, `CSP violations: ${violations.join('; ')}`);
  check(pageErrors.length === 0, `uncaught errors: ${pageErrors.join('; ')}`);
  // The one refused stream (400) of the refused-input step; nothing else.
  const unexpected = consoleErrors.filter((text) => !/status of 400/.test(text));
  check(unexpected.length === 0, `console errors: ${unexpected.join('; ')}`);
  check(consoleErrors.length <= 1, `console errors: ${consoleErrors.join('; ')}`);
  // The picture of the page for the README: its top, the card and the first skill answered.
  await page.setViewportSize({ width: 1200, height: 1500 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${shots}/landing.png` });
  await page.setViewportSize({ width: 1200, height: 900 });
});

await step('reads-without-javascript', async () => {
  const plain = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1200, height: 900 } });
  const noScript = await plain.newPage();
  await noScript.goto(`${root}/`);
  const name = await noScript.locator('#agent-name').textContent();
  check(name && name.length > 0, 'no agent name without JavaScript');
  check(await noScript.locator('article.skill').count() >= 4, 'the skills are not listed without JavaScript');
  check(await noScript.locator('form.try-form').count() === 0, 'a form that cannot work is shown');
  check(await noScript.locator('noscript').count() >= 1, 'no notice that the forms need JavaScript');
  return noScript;
});

await browser.close();
console.log(`browser-test: ${number} steps passed`);
