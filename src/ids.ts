// One id scheme for every resource: a short resource prefix and a UUID v7 (time-ordered, so ids sort by creation
// and index well). Public `uniqid` values are random UUID v4.
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

export type IdPrefix =
  | 'shop'
  | 'key'
  | 'prod'
  | 'var'
  | 'ser'
  | 'cus'
  | 'wal'
  | 'ord'
  | 'item'
  | 'pay'
  | 'evt'
  | 'whe'
  | 'whd'
  | 'whl'
  | 'eml'
  | 'aud'
  | 'req'
  | 'gw'
  | 'cpn'
  | 'att'
  | 'plk'
  | 'rfd'
  | 'bl'
  | 'dyn'
  | 'vfd'
  | 'vfo'
  | 'qdl'
  | 'add'
  | 'wtx'
  | 'aapp'
  | 'acm'
  | 'sub'
  | 'srn'
  | 'lic'
  | 'ldv'
  | 'dsp'
  | 'rev'
  | 'tkt'
  | 'tkm'
  | 'rsl'
  | 'tier'
  | 'rsp';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${uuidv7().replace(/-/g, '')}`;
}

export function newUniqid(): string {
  return randomUUID();
}
