// timestamptz text -> Date, for both drivers (db/database.ts registers it). The general parser (postgres-date) runs
// three regular expressions per value; a page of 50 products carries over a hundred timestamps, and that parsing was
// about 0.4 ms of the request. PostgreSQL's output for timestamptz is fixed under DateStyle ISO (the default):
// `2026-11-22 08:57:00.123456+00`, the fraction 0-6 digits, the zone `±HH[:MM[:SS]]`. Exactly that shape is read
// here digit by digit; anything else (BC, infinity, years before 100 or after 9999, another DateStyle) goes to the
// general parser, so the result is the same Date either way (milliseconds, the fraction truncated).

/** The two-digit number at `i`, or -1 when those are not two digits. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** Returns a fast parser that hands what it does not recognise to `general`. */
export function timestamptzParser<T>(general: (text: string) => T): (text: string) => Date | T {
  return (text) => {
    const n = text.length;
    if (
      n < 22 ||
      text.charCodeAt(4) !== 45 || // -
      text.charCodeAt(7) !== 45 ||
      text.charCodeAt(10) !== 32 || // space
      text.charCodeAt(13) !== 58 || // :
      text.charCodeAt(16) !== 58
    ) {
      return general(text);
    }
    const century = two(text, 0);
    const yy = two(text, 2);
    const month = two(text, 5);
    const day = two(text, 8);
    const hour = two(text, 11);
    const minute = two(text, 14);
    const second = two(text, 17);
    if (century < 1 || yy < 0 || month < 1 || day < 1 || hour < 0 || minute < 0 || second < 0) return general(text);

    let i = 19;
    let millis = 0;
    if (text.charCodeAt(i) === 46) {
      // .fraction: the first three digits are the milliseconds (truncated, as the general parser's Date does)
      let digits = 0;
      for (i++; i < n; i++, digits++) {
        const d = text.charCodeAt(i) - 48;
        if (d < 0 || d > 9) break;
        if (digits < 3) millis = millis * 10 + d;
      }
      if (digits === 0 || digits > 6) return general(text);
      for (let k = digits; k < 3; k++) millis *= 10;
    }
    const sign = text.charCodeAt(i);
    if (sign !== 43 && sign !== 45) return general(text); // + or -
    const offsetHours = two(text, i + 1);
    if (offsetHours < 0) return general(text);
    let offsetSeconds = offsetHours * 3600;
    i += 3;
    if (i < n) {
      // :MM
      const minutes = text.charCodeAt(i) === 58 ? two(text, i + 1) : -1;
      if (minutes < 0) return general(text);
      offsetSeconds += minutes * 60;
      i += 3;
      if (i < n) {
        // :SS, and nothing after it
        const seconds = text.charCodeAt(i) === 58 ? two(text, i + 1) : -1;
        if (seconds < 0 || i + 3 !== n) return general(text);
        offsetSeconds += seconds;
      }
    }

    const utc = Date.UTC(century * 100 + yy, month - 1, day, hour, minute, second, millis);
    return new Date(sign === 43 ? utc - offsetSeconds * 1000 : utc + offsetSeconds * 1000);
  };
}
