// docs/grafana-dashboard.json, the dashboard an operator imports: it charts every series this process registers,
// and charts nothing the process does not export (a renamed metric would leave an empty panel behind).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { registry } from '../../src/platform/metrics';

const dashboard = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8')) as {
  __inputs: { name: string; pluginId: string }[];
  uid: string;
  panels: { type: string; targets?: { expr: string }[] }[];
};
const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const charted = new Set(
  exprs.flatMap((e) => e.match(/mdapi_\w+/g) ?? []).map((m) => m.replace(/_(bucket|count|sum)$/, '')),
);

/** The process metrics (prom-client's defaults, under the same prefix). */
const processRegistry = new Registry();
collectDefaultMetrics({ register: processRegistry, prefix: 'mdapi_' });
const defaults = new Set(processRegistry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name));

test('imports into Grafana with a Prometheus data source chosen at import', () => {
  expect(dashboard.uid).toBe('mdapi-overview');
  expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' })]);
  expect(exprs.length).toBeGreaterThan(15);
});

test('every series of the API has a panel', async () => {
  const ours = (await registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => !defaults.has(n));
  expect(ours.length).toBeGreaterThanOrEqual(11);
  expect(ours.filter((name) => !charted.has(name))).toEqual([]);
});

test('every panel charts a series the process exports', async () => {
  const exported = new Set([...(await registry.getMetricsAsJSON()).map((m) => m.name), ...defaults]);
  expect([...charted].filter((name) => !exported.has(name))).toEqual([]);
});
