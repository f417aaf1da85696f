// `npm run ops`: every operation of the contract with its method, path, scope and whether this server performs it
// (`implemented`) or answers 501 NOT_IMPLEMENTED (its handler is still `notImplemented`), then the totals.
// `--json` prints the same rows as JSON.
import { handlers, notImplemented } from '../handlers';
import { operations, type OperationId } from '../src/generated/operations';
import { loadSpec } from '../src/spec';

const spec = loadSpec();
/** `security: []`: no bearer credential (the OAuth browser page and the client-authenticated token endpoint). */
const isPublic = (path: string, method: string) =>
  (spec.paths[path]?.[method]?.security as unknown[] | undefined)?.length === 0;

interface Row {
  operationId: string;
  method: string;
  path: string;
  scope: string;
  tag: string;
  status: 'implemented' | '501';
}

const rows: Row[] = (Object.keys(operations) as OperationId[])
  .map((id) => {
    const op = operations[id];
    const scopes = op.scopes as readonly string[];
    return {
      operationId: id,
      method: op.method.toUpperCase(),
      path: `/dev/v1${op.path}`,
      scope: scopes.length ? scopes.join(' ') : isPublic(op.path, op.method) ? 'none (public)' : '- (any credential)',
      tag: op.tag,
      status: (handlers[id] as unknown) === notImplemented ? ('501' as const) : ('implemented' as const),
    };
  })
  .sort((a, b) => a.tag.localeCompare(b.tag) || a.path.localeCompare(b.path) || a.method.localeCompare(b.method));

if (process.argv.includes('--json')) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const headers = ['operationId', 'method', 'path', 'scope', 'status'] as const;
  const width = Object.fromEntries(
    headers.map((h) => [h, Math.max(h.length, ...rows.map((r) => r[h].length))]),
  ) as Record<(typeof headers)[number], number>;
  const line = (cells: Record<(typeof headers)[number], string>) =>
    headers
      .map((h) => cells[h].padEnd(width[h]))
      .join('  ')
      .trimEnd();
  console.log(line({ operationId: 'operationId', method: 'method', path: 'path', scope: 'scope', status: 'status' }));
  console.log(headers.map((h) => '-'.repeat(width[h])).join('  '));
  for (const r of rows) console.log(line(r));
  const implemented = rows.filter((r) => r.status === 'implemented').length;
  console.log('');
  console.log(
    `operations: ${rows.length}   implemented: ${implemented}   501 NOT_IMPLEMENTED: ${rows.length - implemented}`,
  );
}
