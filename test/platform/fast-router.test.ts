// The memoised router must answer exactly as openapi-backend's own: same operation, same 404/405, for every
// path of the contract (templates filled in) with every method, and for paths outside the API.
import { OpenAPIRouter } from 'openapi-backend';
import { loadSpec } from '../../src/spec';
import { speedUpRouter } from '../../src/http/fast-router';

function answer(router: OpenAPIRouter, method: string, path: string): string {
  try {
    return router.matchOperation({ method, path, headers: {}, query: {} } as never, true)?.operationId ?? 'none';
  } catch (err) {
    return (err as Error).message.slice(0, 3);
  }
}

test('same answer as the original router for every path and method', () => {
  const original = new OpenAPIRouter({ definition: loadSpec() as never, apiRoot: '/dev/v1' });
  const fast = new OpenAPIRouter({ definition: loadSpec() as never, apiRoot: '/dev/v1' });
  speedUpRouter(fast);
  const paths = (original.getOperations() as unknown as { path: string }[]).map(
    (op) => `/dev/v1${op.path.replace(/\{[^}]+\}/g, 'id_1')}`,
  );
  paths.push('/dev/v1/nope', '/dev/v1', '/elsewhere', '/dev/v1/products/a/b/c', '/dev/v1/products/quantity-deals/x');
  let compared = 0;
  for (const path of paths) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      expect({ method, path, op: answer(fast, method, path) }).toEqual({
        method,
        path,
        op: answer(original, method, path),
      });
      compared++;
    }
  }
  expect(compared).toBeGreaterThan(400);
});
