// Checks stored events against the `webhooks` section of openapi.yaml: the body a delivery sends
// (`{ event, data, livemode }`, src/platform/events.ts eventBody) must match the documented payload of its event type.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { eventBody } from '../../src/platform/events';
import { loadSpec } from '../../src/spec';

const ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
addFormats(ajv);
ajv.addSchema(loadSpec() as object, 'spec');
const validators = new Map<string, ValidateFunction>();

function validatorOf(type: string): ValidateFunction {
  let v = validators.get(type);
  if (!v) {
    v = ajv.compile({
      $ref: `spec#/webhooks/${type.replace(/~/g, '~0').replace(/\//g, '~1')}/post/requestBody/content/application~1json/schema`,
    });
    validators.set(type, v);
  }
  return v;
}

/** Every stored event of these types in the shop, checked against its documented payload; returns how many. */
export async function assertEventPayloads(db: Kysely<Database>, shopId: string, types: string[]): Promise<number> {
  const rows = await sql<{ id: string; type: string; data: string; livemode: boolean }>`select id, type, data,
    livemode from events where shop_id = ${shopId} and type = any(${types}) order by created_at, id`.execute(db);
  for (const row of rows.rows) {
    const validate = validatorOf(row.type);
    if (!validate(JSON.parse(eventBody(row.type, row.data, row.livemode))))
      throw new Error(`event ${row.id} (${row.type}) breaks its webhook payload: ${ajv.errorsText(validate.errors)}`);
  }
  return rows.rows.length;
}
