// Reads cannot write: read operations get the database through this plugin, which refuses any statement that is
// not a SELECT (or a raw statement), before it reaches PostgreSQL. The ReadDb type makes the same mistake a compile
// error; this catches what a cast or a raw builder would slip past the compiler.
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';

export class WriteInReadError extends Error {}

const writeKinds = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);

export class ReadOnlyPlugin implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (writeKinds.has(args.node.kind) || (args.node.kind === 'SelectQueryNode' && hasWritingCte(args.node))) {
      throw new WriteInReadError(`a read operation attempted a write (${args.node.kind})`);
    }
    return args.node;
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

/** `with x as (delete … returning …) select …` writes too. */
function hasWritingCte(node: RootOperationNode): boolean {
  const ctes = (node as { with?: { expressions: { expression: { kind: string } }[] } }).with?.expressions ?? [];
  return ctes.some((c) => writeKinds.has(c.expression.kind));
}
