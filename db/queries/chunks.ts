// Multi-row INSERTs are split so no statement binds more than PostgreSQL's 65,535 parameters.
// 2,000 rows leaves room for tables of up to 32 columns.
export const insertChunkRows = 2000;

export function* chunks<T>(rows: T[], size: number): Generator<T[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}
