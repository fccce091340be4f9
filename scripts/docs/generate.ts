// Writes the site's generated pages before VitePress builds it (`npm run docs:build`, `docs:dev`): the CLI reference
// from the commands' own help text, the config reference from the schemas' `.describe()`, the SDK reference by TypeDoc
// (one page per topic), and a page per built-in environment from its README. None of them is committed
// (.gitignore); test/docs/ checks what they hold.
import { fileURLToPath } from 'node:url';
import { writeCliReference } from './cli-reference.js';
import { writeConfigReference } from './config-reference.js';
import { writeEnvironmentPages } from './environment-pages.js';
import { writeSdkReference } from './sdk-reference.js';
import { docs } from './pages.js';

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const counts = {
    cli: await writeCliReference(),
    config: await writeConfigReference(),
    environments: await writeEnvironmentPages(),
    sdk: await writeSdkReference(docs),
  };
  const pages = Object.entries(counts).map(([what, n]) => `${n} ${what}`);
  console.log(`docs: generated ${pages.join(', ')} pages in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
