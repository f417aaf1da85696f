// The fixture file format of `cli seed`: validated against a JSON Schema before anything is written, and written
// in one transaction, so a bad file changes nothing.
import Ajv2020 from 'ajv/dist/2020';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import { insertProduct, insertVariants } from '../../db/queries/products';
import { newId, newUniqid } from '../ids';

const decimal = { type: 'string', pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,8})?$' };

export const fixtureSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  additionalProperties: false,
  properties: {
    products: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['title', 'price'],
        properties: {
          title: { type: 'string', minLength: 1, maxLength: 200 },
          slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 200 },
          type: { enum: ['SERIALS', 'FILE', 'SERVICE', 'DYNAMIC', 'SUBSCRIPTION'] },
          description: { type: 'string' },
          price: decimal,
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
          stock: { type: 'integer', minimum: -1 },
          gateways: { type: 'array', items: { type: 'string' } },
          unlisted: { type: 'boolean' },
          description_tabs: {
            type: 'array',
            items: { type: 'object', additionalProperties: false, required: ['title', 'content'], properties: { title: { type: 'string' }, content: { type: 'string' } } },
          },
          variants: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['title', 'price'],
              properties: { title: { type: 'string', minLength: 1 }, price: decimal, stock: { type: 'integer', minimum: -1 } },
            },
          },
        },
      },
    },
  },
} as const;

export interface ProductFixture {
  title: string;
  slug?: string;
  type?: 'SERIALS' | 'FILE' | 'SERVICE' | 'DYNAMIC' | 'SUBSCRIPTION';
  description?: string;
  price: string;
  currency?: string;
  stock?: number;
  gateways?: string[];
  unlisted?: boolean;
  description_tabs?: { title: string; content: string }[];
  variants?: { title: string; price: string; stock?: number }[];
}

export interface Fixtures {
  products?: ProductFixture[];
}

export class FixtureError extends Error {}

const validate = new Ajv2020({ allErrors: true }).compile(fixtureSchema);

export function parseFixtures(value: unknown): Fixtures {
  if (!validate(value)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new FixtureError(`The fixture file is not valid:\n  ${problems.join('\n  ')}`);
  }
  return value as Fixtures;
}

function slugify(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60) || 'product';
}

/** Writes the fixtures for a shop (in the caller's transaction) and returns the ids it created. */
export async function seedFixtures(trx: Kysely<Database>, shop: { id: string; currency: string }, fixtures: Fixtures) {
  const created = { products: [] as string[], variants: [] as string[] };
  for (const p of fixtures.products ?? []) {
    const product = await insertProduct(trx, {
      id: newId('prod'),
      shop_id: shop.id,
      uniqid: newUniqid(),
      slug: p.slug ?? `${slugify(p.title)}-${newUniqid().slice(0, 8)}`,
      type: p.type ?? 'SERVICE',
      subtype: null,
      title: p.title,
      currency: p.currency ?? shop.currency,
      description: p.description ?? '',
      price: p.price,
      price_display: p.price,
      description_tabs: JSON.stringify(p.description_tabs ?? []),
      gateways: p.gateways ?? [],
      custom_fields: JSON.stringify([]),
      delivery_instructions: null,
      quantity_min: 1,
      quantity_max: -1,
      quantity_warning: 0,
      stock: p.stock ?? -1,
      stock_delimiter: ',',
      unlisted: p.unlisted ?? false,
      private: false,
      on_hold: false,
      block_vpn_proxies: false,
      watermark_enabled: false,
      sort_priority: 0,
      crypto_confirmations: 1,
      max_risk_level: 100,
      delivery_text: '',
      service_text: '',
      delivery_time: null,
      dynamic_webhook: null,
      image_id: null,
      image_url: null,
    });
    created.products.push(product.id);
    const variants = await insertVariants(
      trx,
      (p.variants ?? []).map((v, i) => ({
        id: newId('var'),
        shop_id: shop.id,
        product_id: product.id,
        title: v.title,
        price: v.price,
        price_display: v.price,
        stock: v.stock ?? -1,
        sort_priority: i,
      })),
    );
    created.variants.push(...variants.map((v) => v.id));
  }
  return created;
}
