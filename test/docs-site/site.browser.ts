// The built docs site (docs/.vitepress/dist, `npm run docs:build`) in headless Chromium, served as `vitepress preview`
// serves it: every internal link and anchor resolves, the local search finds what a newcomer asks for, the code copy
// buttons copy the code, and the generated references hold what the code says. Screenshots of the home page and the
// quick start go to .clotho/test-results/.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { serve } from 'vitepress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsOf, helpOf } from '../../scripts/docs/cli-reference.js';
import { describeFlags } from '../../src/config/help.js';
import type { AnyEnvironment } from '../../src/env/define.js';
import { repoRoot } from '../../src/store/paths.js';

/** Debian's package, installed by scripts/ensure-chromium.mjs (playwright's own browser download is not used). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DIST = join(repoRoot, 'docs/.vitepress/dist');
const RESULTS = join(repoRoot, '.clotho/test-results');

let origin: string;
let server: Server;
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  if (!existsSync(join(DIST, 'index.html'))) throw new Error(`no built site in ${DIST}: run \`npm run docs:build\` first`);
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run \`node scripts/ensure-chromium.mjs\` (or set CHROMIUM_PATH)`);
  const app = await serve({ root: join(repoRoot, 'docs'), port: 0 });
  server = app.server!;
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await mkdir(RESULTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
});

/** Opens `path` of the site; fails on a status other than 200. */
async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  const response = await page.goto(`${origin}${path}`, { waitUntil: 'load' });
  expect(response?.status(), `${path}: HTTP status`).toBe(200);
  return page;
}

describe('the built site', () => {
  it('has no link or anchor that leads nowhere, from the home page through every page it reaches', async () => {
    // Each page as VitePress pre-rendered it (links and heading anchors are in its HTML), in one tab with scripts off:
    // loading every page's application code, most of the site's weight, would multiply the time and check nothing more.
    const crawler = await browser.newContext({ javaScriptEnabled: false });
    const tab = await crawler.newPage();
    /** The pages reached, with the ids on each; the links found, with the page they were on. */
    const ids = new Map<string, Set<string>>();
    const links: { from: string; path: string; hash: string }[] = [];
    const queue = ['/'];
    const seen = new Set(queue);
    while (queue.length > 0) {
      const path = queue.shift()!;
      const response = await tab.goto(`${origin}${path}`, { waitUntil: 'domcontentloaded' });
      expect(response?.status(), `${path}: HTTP status`).toBe(200);
      expect(await tab.locator('.NotFound').count(), `${path} is VitePress's 404 page`).toBe(0);
      const found = {
        ids: await tab.locator('[id]').evaluateAll((elements) => elements.map((e) => e.id)),
        hrefs: await tab.locator('a[href]').evaluateAll((anchors) => anchors.map((a) => (a as unknown as { href: string }).href)),
      };
      ids.set(path, new Set(found.ids));
      for (const href of found.hrefs) {
        const url = new URL(href);
        if (url.origin !== origin) continue;
        const target = url.pathname.replace(/\.html$/, '').replace(/\/index$/, '/');
        links.push({ from: path, path: target, hash: decodeURIComponent(url.hash.slice(1)) });
        if (/\.[a-z0-9]+$/i.test(target)) continue; // an asset, checked below
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
      }
    }
    await crawler.close();
    const broken: string[] = [];
    for (const link of links) {
      if (/\.[a-z0-9]+$/i.test(link.path)) {
        const status = (await fetch(`${origin}${link.path}`)).status;
        if (status !== 200) broken.push(`${link.from} → ${link.path}: HTTP ${status}`);
      } else if (link.hash !== '' && !ids.get(link.path)?.has(link.hash))
        broken.push(`${link.from} → ${link.path}#${link.hash}: no such anchor`);
    }
    expect(broken).toEqual([]);
    // Every guide and reference in the sidebars is among the pages reached.
    for (const path of [
      '/guide/quick-start',
      '/guide/atropos',
      '/guide/crashes',
      '/reference/cli/',
      '/reference/sdk/',
      '/reference/config',
      '/architecture',
    ])
      expect(ids.has(path), path).toBe(true);
    console.log(`docs site: ${ids.size} pages, ${links.length} internal links checked`);
  });

  it.each([
    ['idempotency key', '/guide/crashes'],
    ['--atropos', '/guide/atropos'],
  ])('finds "%s" with the local search, %s among the results', async (query, expected) => {
    const page = await open('/');
    await page.locator('.VPNavBarSearch button').click();
    await page.locator('#localsearch-input').fill(query);
    const results = page.locator('.VPLocalSearchBox .results a.result');
    await results.first().waitFor();
    const hrefs = await Promise.all((await results.all()).map(async (a) => (await a.getAttribute('href')) ?? ''));
    expect(
      hrefs.some((href) => href.startsWith(expected)),
      `${query}: ${hrefs.join(', ')}`,
    ).toBe(true);
    await page.close();
  });

  it('copies a code block with its copy button, and shows it was copied', async () => {
    const page = await open('/guide/quick-start');
    await page.screenshot({ path: join(RESULTS, 'docs-quick-start.png') });
    const block = page.locator('div[class*="language-"]').first();
    const code = (await block.locator('pre code').innerText()).trimEnd();
    expect(code).toMatch(/^npx clotho process gsm8k /);
    await block.hover();
    await block.locator('button.copy').click();
    await expect.poll(() => block.locator('button.copy.copied').count()).toBe(1);
    expect(String(await page.evaluate('navigator.clipboard.readText()')).trimEnd()).toBe(code);
    await page.close();
  });

  it('has a home page that says what Clotho is and where to start', async () => {
    const page = await open('/');
    await page.screenshot({ path: join(RESULTS, 'docs-home.png') });
    await expect.poll(() => page.locator('.VPHero .name').innerText()).toContain('Clotho');
    expect(await page.locator('.VPHero a.VPButton', { hasText: 'Quick start' }).getAttribute('href')).toBe('/guide/quick-start');
    await page.close();
  });
});

describe('the generated references', () => {
  it('has a page per command of `clotho --help`, holding that command’s help', async () => {
    const commands = commandsOf(await helpOf(['--help']));
    expect(commands.map((c) => c.name)).toContain('process');
    const page = await context.newPage();
    for (const { name } of commands) {
      const response = await page.goto(`${origin}/reference/cli/${name}`);
      expect(response?.status(), name).toBe(200);
      const firstLine = (await helpOf([name, '--help'])).split('\n')[0]!;
      expect(await page.locator('.vp-doc pre').first().innerText(), name).toContain(firstLine);
    }
    await page.close();
  });

  it('lists the config fields with the words of their schemas’ .describe()', async () => {
    const rows = describeFlags({ name: 'any', description: 'any', config: {} } as unknown as AnyEnvironment);
    const page = await open('/reference/config');
    const text = await page.locator('.vp-doc').innerText();
    for (const flag of ['--env.group_size', '--openai.base_url', '--steps.<step>.maximum_attempts']) {
      const row = rows.find((r) => r.flag === flag);
      expect(row, flag).toBeDefined();
      expect(text).toContain(flag);
      expect(text).toContain(row!.description);
    }
    await page.close();
  });

  it.each([
    ['environments', 'defineEnvironment'],
    ['testing', 'playEpisode'],
    ['tools', 'defineTool'],
  ])('documents the SDK by topic: %s has %s with its doc comment', async (topic, name) => {
    const page = await open(`/reference/sdk/${topic}`);
    await expect.poll(() => page.locator(`.vp-doc h3:has-text("${name}")`).count()).toBeGreaterThan(0);
    await page.close();
  });
});
