// The Ajv behind openapi-backend's request validation: Ajv 2020 (OpenAPI 3.1 schemas) with ajv-formats, one instance
// per option set. Compiling the request validators of every operation takes about 0.4 s, which used to be paid
// before the server could answer anything. Here a validator is compiled on its first use; the server
// (src/server.ts) compiles the rest in the background once it listens, a few milliseconds at a time, so no request
// waits for more than its own operation's validator and, shortly after start, none waits at all.
import Ajv2020 from 'ajv/dist/2020';
import type { AnySchema, Options, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

type Compile = () => ValidateFunction;

/** Validators created while a collector is open (the server's start), compiled later by `compileInBackground`. */
let collected: Compile[] | undefined;

function lazyValidator(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const ensure = () => (compiled ??= compile());
  // openapi-backend calls the function, then reads `.errors` from it: forward both.
  const validate = function (this: unknown, data: unknown) {
    const fn = ensure();
    const valid = fn.call(this, data);
    validate.errors = fn.errors;
    return valid;
  } as ValidateFunction;
  collected?.push(ensure);
  return validate;
}

type AjvFactory = (original: unknown, ajvOpts: Options, context?: unknown) => never;

/** openapi-backend's `customizeAjv`: one lazily compiling Ajv per option set, shared by every operation. */
export function lazyAjvFactory(): AjvFactory {
  const ajvs = new Map<string, Ajv2020>();
  return (_original: unknown, ajvOpts: Options): never => {
    const key = JSON.stringify(ajvOpts);
    let ajv = ajvs.get(key);
    if (!ajv) {
      // validateSchema: false: checking each schema against the JSON Schema meta-schema first was ~50 ms of every
      // start; the contract is linted in CI (redocly, spectral) and every validator is compiled by the test suite.
      ajv = new Ajv2020({ ...ajvOpts, allErrors: true, strict: false, validateSchema: false });
      addFormats(ajv);
      const compileNow = ajv.compile.bind(ajv) as (schema: AnySchema) => ValidateFunction;
      ajv.compile = ((schema: AnySchema) => lazyValidator(() => compileNow(schema))) as Ajv2020['compile'];
      ajvs.set(key, ajv);
    }
    return ajv as never;
  };
}

/**
 * Starts collecting the validators created from now on (call before building the app); `compileInBackground`
 * then compiles them in slices of at most `sliceMs`, yielding to the event loop between slices, and not while
 * `busy()` says requests are being answered: a request compiles its own operation's validator when it needs it,
 * and the first requests after a start were waiting behind slices compiling validators nobody had asked for.
 */
export function collectValidators(): {
  compileInBackground(options?: { sliceMs?: number; busy?: () => boolean; busyWaitMs?: number }): Promise<void>;
} {
  const list: Compile[] = [];
  collected = list;
  return {
    compileInBackground({ sliceMs = 5, busy = () => false, busyWaitMs = 50 } = {}) {
      if (collected === list) collected = undefined;
      // A schema Ajv cannot compile fails its operation's requests (a 500, logged) as it would have failed the
      // start; the first such error is reported once every other validator is compiled.
      return new Promise((resolve, reject) => {
        let next = 0;
        let failure: unknown;
        const slice = () => {
          if (busy()) return void setTimeout(slice, busyWaitMs);
          const until = performance.now() + sliceMs;
          while (next < list.length && performance.now() < until) {
            try {
              list[next++]!();
            } catch (err) {
              failure ??= err;
            }
          }
          if (next < list.length) setImmediate(slice);
          else if (failure) reject(failure instanceof Error ? failure : new Error(String(failure)));
          else resolve();
        };
        setImmediate(slice);
      });
    },
  };
}

/**
 * openapi-backend's getAjv builds a new Ajv (draft-07, with its own formats added) for every validator it makes and
 * only then asks customizeAjv, which hands back the shared one: at start that is two throwaway instances per
 * operation, ~30 ms of CPU for nothing. Asking the factory directly gives the same Ajv for the same options.
 */
export function askFactoryDirectly(validator: unknown, factory: AjvFactory): void {
  const v = validator as { ajvOpts: Options; getAjv(context: unknown, opts?: Options): unknown };
  v.getAjv = (context, opts = {}) => factory(undefined, { ...v.ajvOpts, ...opts }, context);
}
