// PostgreSQL's refusals, as API answers: a constraint the database enforces is a client's mistake or a conflict,
// never a bare 500. One table says, per constraint, which code and field an integrator sees; a constraint not in
// the table still gets the right status with a generic message.
import { ApiError, DatabaseTimeoutError, ValidationError, type ErrorCode, type ErrorDetail } from '../errors';

interface PgError {
  code: string;
  constraint?: string;
  message?: string;
}

function pgError(err: unknown): PgError | undefined {
  const e = err as { code?: unknown; severity?: unknown };
  // pg and PGlite both give the SQLSTATE as `code` (five characters) and a `severity`.
  return typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && e.severity !== undefined
    ? (err as PgError)
    : undefined;
}

export interface ConstraintAnswer {
  code: ErrorCode;
  /** The request field the constraint is about. */
  field: string;
  message: string;
}

/** Unique constraints -> 409 with the resource's code. */
export const uniqueConstraints: Readonly<Record<string, ConstraintAnswer>> = {
  products_shop_slug_key: {
    code: 'CONFLICT',
    field: 'slug',
    message: 'A product with this slug already exists in this shop.',
  },
  customers_shop_email_key: {
    code: 'CONFLICT',
    field: 'email',
    message: 'A customer with this email already exists in this shop.',
  },
  customers_shop_affiliate_code_key: {
    code: 'CONFLICT',
    field: 'affiliate_code',
    message: 'Another affiliate of this shop already has this code.',
  },
  product_variant_fields_name_key: {
    code: 'CONFLICT',
    field: 'name',
    message: 'The product already has a variant field with this name (names are unique per product, ignoring case).',
  },
  product_variant_field_options_value_key: {
    code: 'CONFLICT',
    field: 'value',
    message: 'The variant field already has an option with this value (values are unique per field, ignoring case).',
  },
};

/**
 * Foreign keys -> 422 on the field that holds the reference: a dangling reference means: the referenced resource does not exist in this shop. Composite
 * keys (shop_id, x_id) make a reference into another shop fail here too, with the same answer as a missing one.
 */
export const foreignKeys: Readonly<Record<string, Omit<ConstraintAnswer, 'code'>>> = {
  product_variants_product_fkey: {
    field: 'product_id',
    message: 'No product with this id exists in this shop.',
  },
  product_serials_product_fkey: {
    field: 'product_id',
    message: 'No product with this id exists in this shop.',
  },
  // Checked at commit (db/migrations/0032): a line's product or variant gone before the order committed.
  order_items_product_fkey: {
    field: 'items',
    message: 'A product of this order does not exist in this shop (any more).',
  },
  order_items_variant_fkey: {
    field: 'items',
    message: 'A variant of this order does not exist in this shop (any more).',
  },
  product_serials_variant_fkey: {
    field: 'variant_id',
    message: 'No variant with this id exists in this shop.',
  },
  customers_referred_by_fkey: {
    field: 'referred_by_customer_id',
    message: 'No customer with this id exists in this shop.',
  },
};

/** SQLSTATE class 22 (data exception): a value PostgreSQL cannot take. */
function dataException(code: string): string {
  switch (code) {
    case '22003':
      return 'a number is out of the range this field accepts';
    case '22007':
    case '22008':
      return 'a date or time is not valid';
    case '22001':
      return 'a text is longer than this field accepts';
    case '22P02':
      return 'a value does not have the form its field needs';
    case '22012':
      return 'a value would need a division by zero';
    default:
      return 'a value is not valid for its field';
  }
}

/** The API answer to a PostgreSQL error, or undefined when it is not one this table answers. */
export function databaseErrorAnswer(err: unknown): ApiError | undefined {
  const e = pgError(err);
  if (!e) return undefined;
  if (e.code === '23505') {
    const known = e.constraint ? uniqueConstraints[e.constraint] : undefined;
    return new ApiError(known?.code ?? 'CONFLICT', known?.message, {
      details: known ? [{ field: known.field, message: 'is already taken' }] : undefined,
    });
  }
  if (e.code === '23503') {
    // Deleting (or re-keying) a row something still points at: the request conflicts with what exists.
    if (/^update or delete on table/i.test(e.message ?? '')) {
      return new ApiError('CONFLICT', 'This resource is still referenced by others and cannot be removed.');
    }
    const known = e.constraint ? foreignKeys[e.constraint] : undefined;
    const details: ErrorDetail[] = [
      {
        field: known?.field ?? 'body',
        message: known ? 'does not exist in this shop' : 'refers to something that does not exist',
      },
    ];
    return new ValidationError(details, known?.message ?? 'The request refers to a resource that does not exist.');
  }
  if (e.code === '23502' || e.code === '23514') {
    return new ValidationError([
      {
        field: 'body',
        message: e.code === '23502' ? 'a required value is missing' : 'a value breaks a rule of its field',
      },
    ]);
  }
  if (e.code.startsWith('22')) {
    return new ValidationError(
      [{ field: 'request', message: dataException(e.code) }],
      'The request has an invalid value.',
    );
  }
  if (e.code === '57014') return new DatabaseTimeoutError();
  return undefined;
}
