// Which operation of openapi.yaml a request addresses: method + concrete path -> operationId, with the same
// precedence as the router (a literal segment beats a template one, so /webhooks/logs is not /webhooks/{id}).
import { loadSpec } from '../../src/spec';

export interface ContractOperation {
  operationId: string;
  method: string;
  /** The path template with the server prefix, e.g. /dev/v1/orders/{id}/complete. */
  path: string;
}

interface Matcher extends ContractOperation {
  pattern: RegExp;
  literalSegments: number;
}

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

function serverPrefix(spec: any, pathItem: any, op: any): string {
  const servers = op.servers ?? pathItem.servers ?? spec.servers ?? [{ url: '' }];
  return String(servers[0]?.url ?? '').replace(/\/$/, '');
}

/** Every operation of the contract, with the server prefix of its path (path- or operation-level servers win). */
export function contractOperations(): ContractOperation[] {
  const spec = loadSpec() as any;
  const out: ContractOperation[] = [];
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const method of methods) {
      const op = item[method];
      if (!op) continue;
      out.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path: serverPrefix(spec, item, op) + path,
      });
    }
  }
  return out;
}

export function operationMatcher(ops: ContractOperation[]): (method: string, url: string) => string | undefined {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const matchers: Matcher[] = ops.map((o) => {
    const segments = o.path.split('/');
    const source = segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : escape(s))).join('/');
    return {
      ...o,
      pattern: new RegExp(`^${source}$`),
      literalSegments: segments.filter((s) => !s.includes('{')).length,
    };
  });
  matchers.sort((a, b) => b.literalSegments - a.literalSegments);
  return (method, url) => {
    const path = new URL(url, 'http://x').pathname;
    return matchers.find((m) => m.method === method.toUpperCase() && m.pattern.test(path))?.operationId;
  };
}
