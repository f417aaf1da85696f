// The layers of a bench CPU profile (test/bench/profile.ts), on a hand-made profile: one node of each kind of
// frame, each sampled for a known time, so each layer's sum and share can be checked exactly.
import { attribute, formatAttribution, formatComparison, layerOf, type Profile } from './profile';

const root = 'file:///work/app';
/** Each frame's node is a child of its caller's, when it has one (all others are the root's). */
const frames: [url: string, functionName: string, caller?: string][] = [
  ['', '(root)'],
  ['', '(idle)'],
  ['', '(garbage collector)'],
  ['', '(program)'],
  ['', 'JSON.stringify'],
  ['node:internal/process/task_queues', 'processTicksAndRejections'],
  ['node:net', 'Socket._writeGeneric'],
  ['node:_http_server', 'parserOnIncoming'],
  [`${root}/node_modules/kysely/dist/cjs/query-compiler/default-query-compiler.js`, 'compileQuery'],
  [`${root}/node_modules/pg-protocol/dist/parser.js`, 'parse'],
  [`${root}/node_modules/express/lib/application.js`, 'handle'],
  [`${root}/node_modules/router/index.js`, 'next'],
  [`${root}/node_modules/openapi-backend/backend.js`, 'handleRequest'],
  [`${root}/node_modules/ajv/dist/compile/validate.js`, 'validate'],
  [`${root}/node_modules/@opentelemetry/api/build/src/api/context.js`, 'with'],
  [`${root}/node_modules/decimal.js/decimal.js`, 'plus'],
  [`${root}/node_modules/@scope/thing/index.js`, 'run'],
  [`${root}/src/domain/orders/create.ts`, 'createOrder'],
  [`${root}/src/app.ts`, 'createApp'],
  [`${root}/db/queries/orders.ts`, 'insertOrder'],
  [`${root}/handlers/orders.ts`, 'createOrderHandler'],
  [`${root}/test/bench/order-writes.ts`, 'bareRoute'],
  ['', 'writev', 'Socket._writeGeneric'],
  ['', 'JSON.parse', 'parse'],
  ['', 'validate12', 'handleRequest'],
  ['', 'validate13'],
];

/** Node i+1 (i = its frame's index) sampled i + 1 times, each sample lasting 100 µs (the last one too). */
function handMade(): Profile {
  const nodes = frames.map(([url, functionName], i) => ({
    id: i + 1,
    callFrame: { url, functionName, scriptId: String(i), lineNumber: 0, columnNumber: 0 },
    children: frames.flatMap(([, , caller], child) => (caller === functionName ? [child + 1] : [])),
  }));
  const samples = frames.flatMap((_, i) => Array<number>(i + 1).fill(i + 1));
  return {
    nodes,
    startTime: 0,
    samples,
    timeDeltas: samples.map(() => 100),
    endTime: (samples.length + 1) * 100,
  };
}

const samplesOf = (functionName: string) => frames.findIndex(([, f]) => f === functionName) + 1;

describe('layerOf', () => {
  it.each([
    ['(idle)', '(idle)'],
    ['(garbage collector)', 'GC'],
    ['(program)', 'V8 / native'],
    ['JSON.stringify', 'V8 / native'],
    ['validate13', 'openapi-backend + ajv'],
    ['processTicksAndRejections', 'node internals'],
    ['Socket._writeGeneric', 'node http+net'],
    ['parserOnIncoming', 'node http+net'],
    ['compileQuery', 'kysely'],
    ['parse', 'pg driver'],
    ['handle', 'express'],
    ['next', 'express'],
    ['handleRequest', 'openapi-backend + ajv'],
    ['validate', 'openapi-backend + ajv'],
    ['with', 'tracing'],
    ['plus', 'decimal.js'],
    ['run', '@scope/thing'],
    ['createOrder', 'ours: src/domain'],
    ['createApp', 'ours: src'],
    ['insertOrder', 'ours: db'],
    ['createOrderHandler', 'ours: handlers'],
    ['bareRoute', 'bench harness'],
  ])('%s is counted to %s', (functionName, layer) => {
    const [url] = frames.find(([, f]) => f === functionName)!;
    expect(layerOf({ url, functionName })).toBe(layer);
  });

  it('names a package by the last node_modules of its path (a package inside another)', () => {
    expect(layerOf({ url: `${root}/node_modules/a/node_modules/pg-types/index.js`, functionName: 'f' })).toBe(
      'pg driver',
    );
  });
});

describe('attribute', () => {
  it("counts a builtin or binding to its caller's layer, Ajv's compiled validators to Ajv", () => {
    const a = attribute(handMade());
    const ms = (layer: string) => a.rows.find((r) => r.layer === layer)!.ms;
    const sampled = (...names: string[]) => names.reduce((sum, name) => sum + samplesOf(name) * 0.1, 0);
    expect(ms('node http+net')).toBeCloseTo(sampled('Socket._writeGeneric', 'parserOnIncoming', 'writev'));
    expect(ms('pg driver')).toBeCloseTo(sampled('parse', 'JSON.parse'));
    expect(ms('openapi-backend + ajv')).toBeCloseTo(sampled('handleRequest', 'validate', 'validate12', 'validate13'));
    expect(ms('V8 / native')).toBeCloseTo(sampled('(root)', '(program)', 'JSON.stringify'));
  });

  const requests = 10;
  const a = attribute(handMade(), requests);
  const row = (layer: string) => a.rows.find((r) => r.layer === layer);

  it('leaves idle time out of the busy time', () => {
    const all = frames.reduce((sum, _, i) => sum + (i + 1) * 0.1, 0);
    expect(a.idleMs).toBeCloseTo(samplesOf('(idle)') * 0.1);
    expect(a.busyMs).toBeCloseTo(all - a.idleMs);
    expect(row('(idle)')).toBeUndefined();
  });

  it('sums the self time of the frames of a layer, per request and as a share of the busy time', () => {
    const express = (samplesOf('handle') + samplesOf('next')) * 0.1;
    expect(row('express')!.ms).toBeCloseTo(express);
    expect(row('express')!.msPerRequest).toBeCloseTo(express / requests);
    expect(row('express')!.percent).toBeCloseTo((express / a.busyMs) * 100);
    expect(row('GC')!.ms).toBeCloseTo(samplesOf('(garbage collector)') * 0.1);
    expect(a.busyMsPerRequest).toBeCloseTo(a.busyMs / requests);
    expect(a.rows.reduce((sum, r) => sum + r.percent, 0)).toBeCloseTo(100);
  });

  it('puts the largest layer first', () => {
    const ms = a.rows.map((r) => r.ms);
    expect(ms).toEqual([...ms].sort((x, y) => y - x));
    expect(a.rows[0]!.layer).toBe('openapi-backend + ajv'); // two packages' frames, 13 + 14 samples
  });

  it('counts a sample for the time until the next one, the last one until the end of the profile', () => {
    const profile: Profile = {
      nodes: [
        { id: 1, callFrame: { url: '', functionName: '(program)', scriptId: '0', lineNumber: 0, columnNumber: 0 } },
        { id: 2, callFrame: { url: '', functionName: '(idle)', scriptId: '0', lineNumber: 0, columnNumber: 0 } },
      ],
      startTime: 1000,
      samples: [1, 2, 1],
      timeDeltas: [50, 300, 200],
      endTime: 1000 + 550 + 700,
    };
    const b = attribute(profile);
    expect(b.idleMs).toBeCloseTo(0.2);
    expect(b.busyMs).toBeCloseTo(0.3 + 0.7);
    expect(b.requests).toBeUndefined();
    expect(b.rows[0]!.msPerRequest).toBeUndefined();
  });
});

describe('the tables', () => {
  it('shows ms per request when the request count is known, total ms otherwise', () => {
    const table = formatAttribution('create-full-1', attribute(handMade(), 10));
    expect(table).toContain('| layer | ms per request | % of busy |');
    expect(table).toMatch(/^\| kysely \| 0\.090 \| \d+\.\d% \|$/m);
    expect(formatAttribution('saved', attribute(handMade()))).toContain('| layer | ms | % of busy |');
  });

  it('compares the whole stack with its bare route layer by layer, the largest difference first', () => {
    const full = attribute(handMade(), 10);
    const bare = attribute(handMade(), 20);
    const table = formatComparison('create #1', full, bare);
    expect(table).toContain(`${(full.busyMsPerRequest! - bare.busyMsPerRequest!).toFixed(3)} ms more`);
    const lines = table.split('\n').filter((l) => /^\| [^-]/.test(l));
    expect(lines[1]).toMatch(/^\| openapi-backend \+ ajv \|/);
    // 22 samples of 0.1 ms over 10 and 20 requests; the whole difference is 34.9 busy ms / 20.
    expect(lines.find((l) => l.startsWith('| bench harness'))).toBe('| bench harness | 0.220 | 0.110 | 0.110 | 6.3% |');
  });
});
