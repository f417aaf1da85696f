// The site icon of every page this server hosts: an "M" on the product's blue, drawn in SVG so one small file serves
// every size. Browsers ask for /favicon.ico on their own when a page links no icon (the hosted pages, the JSON of the
// contract), so that path answers too, with an ICO (it used to be a JSON 404 in every page's network log).
import type { Response, Router } from 'express';

export const faviconSvg =
  '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">' +
  '<rect width="32" height="32" rx="7" fill="#1d4ed8"/>' +
  '<path d="M8 23V9.5l8 8.5 8-8.5V23" fill="none" stroke="#fff" stroke-width="3.2" stroke-linecap="round" ' +
  'stroke-linejoin="round"/></svg>';

// The same icon as a 32x32 PNG (Chromium's rendering of the SVG above), for /favicon.ico: what a browser fetches
// there by itself gets a real icon (not every client reads an SVG under that name).
const faviconPng =
  'iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAACtUlEQVR4nMSXX0hTURzHv+fcuea/nKaJ5rYaxpLQCoKi3pMUoZee' +
  'gpLotSDoTSjS3uwP1ItShGAq1oOOCfYQPehDPfRgUEhE2HDMKVaz0tS5nc7vxt0f3XW74XY/cLi/3znnd37fnd+5lx0LkrCfm7GX' +
  'RFevM+CkYOyofO7FDiCABSbElHy+/a3YHoRHD4S1MaYZdW2fzjImnkizFrklKAS7EvB5xuMCHK3TzVDYS+QRKaKFRDBnq79cKCsf' +
  'pZYa5JegWCtu5FH+55IJyYlaYV2+aOHywMEkKDcXEKYJoNycMeZCjigvVVBSyHXHKbfuqHufFWP3XGprqrfBKBQz0evGu756nG4q' +
  '0p2nK+BCs11dhNpgpwMepxXZQnMppqyYo8jGcOZECQwLoECN3XKhwS4nXDUFyATNGbrjVGM0CizMuABZnxS/yq5gWC5cXWHRC1HH' +
  'aE5lmbJpLRgXkI7aSkrggL10axj10RjNMYKuACFE3PbPRaC5dDiHOp0oTjrdtN3UR2P/YoGZYCRpLRgXkMzk+2XceBiK+4fdu9B/' +
  'qw42K1PbwG2H2qdBc998WIn725VAd782q37xegkVsrYd7VWqf7yhEH0361T7yMHEa9r1dEGde8xj010rKwGcJ2Rrv6B35Lu63VfP' +
  '71H9U42p7/ej59/w2PtDNz5tHhik+9ki+sfDW/qpr3tgEUYxLIDo6JmHd+Jn3Ceb+v4H3RLEYonCpavhtftz8Ici2F9jTTmg2cZn' +
  'FJCphrTo3W22PGdnYKcxXYBuCb4E1uL259l1GCXbeF0Bw6+WsLousBEV8E3+glGyjWeOtumQPCXVMAMh5rm8AU3BJCg3l/8MTRNA' +
  'ufmGInqkGUb+CVNuHhpt+Cpi7DLyjUA75Va/A4Exzwjd1aQZRO6hy2nLrO+Ql5yUj6QZ1/O/AAAA//8qnhC0AAAABklEQVQDAH6g' +
  '+sCRzSomAAAAAElFTkSuQmCC';

/** An ICO file holding one 32x32 PNG image (the format since Windows Vista; every browser reads it). */
function icoOf(pngBase64: string): Buffer {
  const png = Buffer.from(pngBase64, 'base64');
  const head = Buffer.alloc(22);
  head.writeUInt16LE(1, 2); // type: icon
  head.writeUInt16LE(1, 4); // one image
  head.writeUInt8(32, 6); // width
  head.writeUInt8(32, 7); // height
  head.writeUInt16LE(1, 10); // colour planes
  head.writeUInt16LE(32, 12); // bits per pixel
  head.writeUInt32LE(png.length, 14);
  head.writeUInt32LE(head.length, 18); // where the image starts
  return Buffer.concat([head, png]);
}

export const faviconIco = icoOf(faviconPng);

/** The `<link>` a page puts in its head to use the icon. */
export const faviconLink = '<link rel="icon" href="/favicon.svg" type="image/svg+xml">';

export function serveFavicon(router: Router): void {
  // A day: the icon changes with a release at most, and a stale one for a day harms nobody.
  const cache = (res: Response) => res.set('Cache-Control', 'public, max-age=86400');
  router.get('/favicon.svg', (_req, res) => {
    cache(res).type('image/svg+xml').send(faviconSvg);
  });
  router.get('/favicon.ico', (_req, res) => {
    cache(res).type('image/x-icon').send(faviconIco);
  });
}
