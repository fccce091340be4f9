import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';

// The site of `docs/` (`npm run docs:build`, `npm run docs:dev`). Its reference pages are generated first
// (scripts/docs/generate.ts); the sidebar lists what was generated.
const docs = fileURLToPath(new URL('../', import.meta.url));

/** The generated pages of a folder, `index` first, as sidebar links. */
function generated(folder: string, title: (page: string) => string = (page) => page): DefaultTheme.SidebarItem[] {
  const dir = `${docs}${folder}`;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'index.md')
    .sort()
    .map((f) => f.slice(0, -'.md'.length))
    .map((page) => ({ text: title(page), link: `/${folder}/${page}` }));
}

const guides: DefaultTheme.SidebarItem[] = [
  { text: 'Quick start', link: '/guide/quick-start' },
  { text: 'Bring an Atropos environment', link: '/guide/atropos' },
  { text: 'Bring a verifiers environment', link: '/guide/verifiers' },
  { text: 'Write an environment', link: '/guide/write-an-environment' },
  { text: 'Tools, multi-turn and MCP', link: '/guide/tools' },
  { text: 'Agent programs as harnesses', link: '/guide/harness' },
  { text: 'Train a policy', link: '/guide/train' },
  { text: 'Evaluate, and data for SFT and DPO', link: '/guide/evaluate' },
  { text: 'What a crash redoes', link: '/guide/crashes' },
  { text: 'Inspect a run', link: '/guide/inspect' },
  { text: 'Scale out', link: '/guide/scale-out' },
  { text: 'Benchmarks', link: '/guide/benchmarks' },
  { text: 'Upgrading', link: '/guide/upgrading' },
];

const reference: DefaultTheme.SidebarItem[] = [
  { text: 'The clotho command', link: '/reference/cli/', collapsed: true, items: generated('reference/cli', (c) => `clotho ${c}`) },
  { text: 'The SDK', link: '/reference/sdk/', collapsed: true, items: generated('reference/sdk') },
  { text: 'Config fields', link: '/reference/config' },
  { text: 'Atropos compatibility', link: '/reference/atropos-compatibility' },
  { text: 'Trajectory store', link: '/reference/store' },
  { text: 'Metrics', link: '/reference/metrics' },
];

export default defineConfig({
  title: 'Clotho',
  description: 'Durable reinforcement-learning environments for LLMs on Temporal, wire-compatible with Atropos',
  // Generated entry files for TypeDoc, and code samples (imported into pages, not pages themselves).
  srcExclude: ['.generated/**', 'snippets/**'],
  cleanUrls: true,
  lastUpdated: false,
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/quick-start' },
      { text: 'Reference', link: '/reference/cli/' },
      { text: 'Environments', link: '/environments/' },
      { text: 'Architecture', link: '/architecture' },
    ],
    sidebar: {
      '/guide/': [{ text: 'Guides', items: guides }],
      '/reference/': [{ text: 'Reference', items: reference }],
      '/environments/': [{ text: 'Built-in environments', link: '/environments/', items: generated('environments') }],
      '/architecture': [{ text: 'Guides', items: guides }, { text: 'Reference', items: reference }],
    },
    // Built into the site (MiniSearch over its pages): works offline, no service.
    search: { provider: 'local' },
    outline: [2, 3],
  },
});
