import { Hono } from 'hono';
import { applyFilter, parseFilter } from './filter.js';
import { GROUP_STATUSES } from './model.js';
import { VIEW_PAGE } from './page.js';
import type { LoadedRun, RunSource } from './source.js';
import type { tokenDecoders } from './tokens.js';
import { groupRow, rolloutDetail, runWorkflowsUrl, type TemporalUi } from './wire.js';

/** What the viewer's server shows. */
export interface ViewAppOptions {
  runs: RunSource[];
  decoders: ReturnType<typeof tokenDecoders>;
  temporalUi: TemporalUi;
}

/**
 * The viewer's HTTP app: the page, and read-only JSON of runs, filtered groups and single rollouts. Each run is read
 * on first use and again when the page asks to reload it (a run still going grows).
 */
export function createViewApp({ runs, decoders, temporalUi }: ViewAppOptions): Hono {
  const app = new Hono();
  const loaded = new Map<string, Promise<LoadedRun>>();
  const load = (run: RunSource, again: boolean) => {
    let got = loaded.get(run.id);
    if (!got || again) {
      got = run.load();
      loaded.set(run.id, got);
      got.catch(() => loaded.delete(run.id));
    }
    return got;
  };
  const runOf = (id: string | undefined) => runs.find((r) => r.id === id);

  app.get('/', (c) => c.html(VIEW_PAGE));

  app.get('/api/runs', (c) =>
    c.json({ runs: runs.map((r) => ({ id: r.id, kind: r.kind, origin: r.origin })), temporalUi: temporalUi.base }),
  );

  app.get('/api/groups', async (c) => {
    const run = runOf(c.req.query('run'));
    if (!run) return c.json({ error: `no run "${c.req.query('run') ?? ''}"` }, 404);
    const { groups, notices } = await load(run, c.req.query('reload') === '1');
    const shown = applyFilter(groups, parseFilter(c.req.query()));
    const count = (list: { rollouts: unknown[] }[]) => ({ groups: list.length, rollouts: list.reduce((n, g) => n + g.rollouts.length, 0) });
    const environments = [...new Set(groups.flatMap((g) => (g.address ? [g.address.environment] : [])))].sort();
    const runIds = [...new Set(groups.flatMap((g) => (g.address ? [g.address.runId] : [])))];
    return c.json({
      run: {
        id: run.id,
        kind: run.kind,
        origin: run.origin,
        workflowsUrl: runIds.length === 1 ? runWorkflowsUrl(temporalUi, runIds[0]!) : null,
      },
      environments,
      statuses: Object.fromEntries(GROUP_STATUSES.map((s) => [s, groups.filter((g) => g.status === s).length])),
      total: count(groups),
      shown: count(shown),
      notices,
      groups: shown.map((g) => groupRow(g, temporalUi)),
    });
  });

  app.get('/api/rollout', async (c) => {
    const run = runOf(c.req.query('run'));
    const id = c.req.query('group') ?? '';
    const summary = run && (await load(run, false)).groups.find((g) => g.id === id);
    const group = run && summary ? await run.group(id) : undefined;
    const sample = Number(c.req.query('sample'));
    if (!run || !summary || !group || !Number.isInteger(sample) || sample < 0 || sample >= group.scores.length) {
      return c.json({ error: 'no such rollout' }, 404);
    }
    const { decode, name } = await decoders.forRun(run.id, group);
    const { rollouts: _, ...row } = groupRow({ group: summary, rollouts: [] }, temporalUi);
    return c.json({ group: row, rollout: rolloutDetail(group, sample, decode, name) });
  });

  app.onError((error, c) => c.json({ error: error.message }, 500));
  return app;
}
