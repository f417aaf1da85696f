// The bare baseline as a process of its own (`node test/bench/bare-server.mjs`): express + a pg Pool + the API-key
// look-up, and nothing else (no spec routing, validation, envelope, views, limits, worker). The bench measures it beside the whole stack's own process for the order list, its peak
// RSS under that load, and its cold start. Plain JavaScript on purpose: running TypeScript (Node's type stripping,
// tsx) would cost the baseline ~17 MB and ~0.5 s of every start that the compiled whole stack does not pay. So it
// is self-contained: the credential hash is SHA-256 as src/auth/credentials.ts computes it, and a mismatch
// would show, as every request would answer 401 and the bench fails on any non-2xx.
// Env: DATABASE_URL (required), PORT (0: any free port). Prints `listening on http://127.0.0.1:<port>`.
import { createHash } from 'node:crypto';
import console from 'node:console';
import process from 'node:process';
import express from 'express';
import pg from 'pg';

// Text for timestamps and amounts, as the whole stack reads them (it never builds a Date it does not need): the
// baseline does no work the whole stack skips.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const PAGE = 50;

/** The shop of a live API key, or undefined. */
async function shopOf(authorization) {
  const token = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1] ?? '';
  const { rows } = await pool.query(
    `select c.shop_id from credentials c join shops s on s.id = c.shop_id
     where c.token_hash = $1 and c.revoked_at is null`,
    [createHash('sha256').update(token).digest('hex')],
  );
  return rows[0]?.shop_id;
}

const app = express();

app.get('/me', async (req, res) => {
  const shopId = await shopOf(req.headers.authorization);
  if (!shopId) return void res.status(401).end();
  const { rows } = await pool.query('select id, name, plan from shops where id = $1', [shopId]);
  res.json({ data: rows[0] });
});

// One keyset page of 50 orders (newest first) and their items in one more query: GET /orders?limit=50's work.
app.get('/orders', async (req, res) => {
  const shopId = await shopOf(req.headers.authorization);
  if (!shopId) return void res.status(401).end();
  const { rows } = await pool.query(
    `select *, created_at::text as cursor_value from orders where shop_id = $1 and kind = 'ORDER'
     order by created_at desc, id desc limit ${PAGE + 1}`,
    [shopId],
  );
  const page = rows.slice(0, PAGE);
  const items = await pool.query(
    'select * from order_items where shop_id = $1 and order_id = any($2) order by order_id, position',
    [shopId, page.map((r) => r.id)],
  );
  res.json({ data: page, items: items.rows, has_more: rows.length > PAGE });
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => {
  server.close(() => void pool.end().then(() => process.exit(0)));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
