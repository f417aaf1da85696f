// The few tar (ustar) features a database image needs: regular files and directories, relative names, sizes and
// modes. Written by `npm run db:image` (codegen/schema-image.ts), read by db/schema-image.ts on a first start; no
// links, no long-name extensions (a name longer than the header's 100 + 155 bytes is refused, never truncated).
const BLOCK = 512;

export interface TarEntry {
  /** Relative, '/'-separated, no trailing slash. */
  name: string;
  type: 'file' | 'dir';
  mode: number;
  data: Uint8Array;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(entry: TarEntry): Buffer {
  const name = entry.type === 'dir' ? `${entry.name}/` : entry.name;
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', name.length - 2);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
    if (cut < 0 || Buffer.byteLength(prefix) > 155 || Buffer.byteLength(base) > 100)
      throw new Error(`tar: name too long: ${name}`);
  }
  const h = Buffer.alloc(BLOCK);
  h.write(base, 0, 100, 'utf8');
  h.write(octal(entry.mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  h.write(octal(entry.type === 'file' ? entry.data.length : 0, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii'); // mtime: the image is the same bytes whenever it is made from the same files
  h.write(' '.repeat(8), 148, 'ascii'); // checksum field counts as spaces while summing
  h.write(entry.type === 'file' ? '0' : '5', 156, 'ascii');
  h.write('ustar\x0000', 257, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

export function tarOf(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    parts.push(header(entry));
    if (entry.type === 'file' && entry.data.length) {
      parts.push(Buffer.from(entry.data.buffer, entry.data.byteOffset, entry.data.length));
      const pad = (BLOCK - (entry.data.length % BLOCK)) % BLOCK;
      if (pad) parts.push(Buffer.alloc(pad));
    }
  }
  parts.push(Buffer.alloc(2 * BLOCK)); // end of archive
  return Buffer.concat(parts);
}

function field(h: Buffer, start: number, length: number): string {
  const raw = h.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? length : end).toString('utf8');
}

export function untar(tar: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  for (let at = 0; at + BLOCK <= tar.length;) {
    const h = tar.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (sum !== parseInt(field(h, 148, 8).trim(), 8)) throw new Error(`tar: bad header checksum at ${at}`);
    const prefix = field(h, 345, 155);
    const name = (prefix ? `${prefix}/` : '') + field(h, 0, 100);
    const size = parseInt(field(h, 124, 12).trim() || '0', 8);
    const mode = parseInt(field(h, 100, 8).trim() || '0', 8);
    const flag = String.fromCharCode(h[156]!);
    at += BLOCK;
    const clean = name.replace(/\/+$/, '');
    if (clean.startsWith('/') || clean.split('/').includes('..')) throw new Error(`tar: unsafe name ${name}`);
    if (flag === '5') entries.push({ name: clean, type: 'dir', mode, data: new Uint8Array(0) });
    else if (flag === '0' || flag === '\0')
      entries.push({ name: clean, type: 'file', mode, data: tar.subarray(at, at + size) });
    else throw new Error(`tar: unsupported entry type ${JSON.stringify(flag)} (${name})`);
    at += Math.ceil(size / BLOCK) * BLOCK;
  }
  return entries;
}
