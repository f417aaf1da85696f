// The mail templates (src/mail/templates.ts): what each says, that every value is escaped in the HTML, that the
// subject stays one line, and that an unknown template or ill-shaped data is refused.
import { mailDraft, mailTemplates, MailTemplateError, renderMail, type ReceiptData } from '../../src/mail/templates';

const receipt: ReceiptData = {
  shopName: 'Acme & Co',
  uniqid: '7f0c2a8e-2d7b-4a4e-9b1e-0a3c5d6e7f80',
  items: [
    { title: '<script>alert("x")</script>', quantity: 2, price: '9.99' },
    { title: 'Plain "quoted" item', quantity: 1, price: '0.02' },
  ],
  total: '20.00',
  currency: 'USD',
};

describe('receipt', () => {
  const mail = renderMail('receipt', receipt as unknown as Record<string, unknown>);

  test('names the shop, the order, every item, the total and the currency', () => {
    expect(mail.subject).toBe('Your receipt from Acme & Co (order 7f0c2a8e-2d7b-4a4e-9b1e-0a3c5d6e7f80)');
    expect(mail.text).toContain('Acme & Co has received your payment for order 7f0c2a8e-2d7b-4a4e-9b1e-0a3c5d6e7f80.');
    expect(mail.text).toContain('- <script>alert("x")</script> x 2: 9.99 USD');
    expect(mail.text).toContain('- Plain "quoted" item x 1: 0.02 USD');
    expect(mail.text).toContain('Total: 20.00 USD');
    expect(mail.html).toContain('<strong>20.00 USD</strong>');
  });

  test('a <script> in a product title comes out escaped in the HTML', () => {
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(mail.html).toContain('Plain &quot;quoted&quot; item');
    expect(mail.html).toContain('Acme &amp; Co');
    // The title element too.
    expect(mail.html).toContain('<title>Your receipt from Acme &amp; Co');
  });
});

test('renewal_invoice names the price of the period and links the invoice to pay; values escaped, the link http(s) only', () => {
  const data = {
    shopName: 'Acme & Co',
    uniqid: 'u-9',
    productTitle: 'Pro <b>plan</b>',
    total: '12.00',
    currency: 'EUR',
    payUrl: 'https://pay.example/invoice/u-9?x=1&y="2"',
    dueBy: '2027-01-04T00:00:00.000Z',
  };
  const mail = renderMail('renewal_invoice', data);
  expect(mail.subject).toBe('Your Pro <b>plan</b> subscription at Acme & Co renews: invoice u-9');
  expect(mail.text).toContain('is due: 12.00 EUR (invoice u-9)');
  expect(mail.text).toContain('before 2027-01-04T00:00:00.000Z');
  expect(mail.html).toContain('<a href="https://pay.example/invoice/u-9?x=1&amp;y=&quot;2&quot;">');
  expect(mail.html).not.toContain('<b>plan');
  expect(() => renderMail('renewal_invoice', { ...data, payUrl: 'javascript:alert(1)' })).toThrow(MailTemplateError);
  expect(() => renderMail('renewal_invoice', { ...data, total: 'twelve' })).toThrow(MailTemplateError);
});

test('delivery lists each item with its delivered lines, escaped', () => {
  const mail = renderMail('delivery', {
    shopName: 'Keys <b>Shop</b>',
    uniqid: 'u-1',
    items: [
      { title: 'Game key', content: ['AAAA-BBBB', '<img src=x onerror=alert(1)>'] },
      { title: 'Manual', content: [] },
    ],
  });
  expect(mail.subject).toBe('Your delivery from Keys <b>Shop</b> (order u-1)');
  expect(mail.text).toContain('Game key:\n  AAAA-BBBB\n  <img src=x onerror=alert(1)>\n');
  expect(mail.html).toContain('AAAA-BBBB\n&lt;img src=x onerror=alert(1)&gt;</pre>');
  expect(mail.html).toContain('Keys &lt;b&gt;Shop&lt;/b&gt;');
  expect(mail.html).not.toMatch(/<img|<b>/);
});

test('reseller_invitation links the invitation; the URL is escaped in the attribute and must be http(s)', () => {
  const mail = renderMail('reseller_invitation', {
    shopName: 'Acme',
    inviteUrl: 'https://shop.example/invite?a=1&b="2"',
  });
  expect(mail.subject).toBe('Acme invites you to become a reseller');
  expect(mail.html).toContain('<a href="https://shop.example/invite?a=1&amp;b=&quot;2&quot;">');
  expect(mail.text).toContain('Accept the invitation: https://shop.example/invite?a=1&b="2"');
  expect(() => renderMail('reseller_invitation', { shopName: 'Acme', inviteUrl: 'javascript:alert(1)' })).toThrow(
    MailTemplateError,
  );
  expect(() => renderMail('reseller_invitation', { shopName: 'Acme', inviteUrl: 'not a url' })).toThrow(
    /inviteUrl must be an absolute URL/,
  );
});

test('reseller_invitation without a URL asks the invitee to answer the shop, and shows no link', () => {
  const mail = renderMail('reseller_invitation', { shopName: 'Acme <b>' });
  expect(mail.text).toContain('To accept, answer Acme <b>: the shop then activates your reseller account.');
  expect(mail.html).toContain('Acme &lt;b&gt;');
  expect(mail.html).not.toContain('<a ');
});

test('a subject is one line whatever the data holds', () => {
  const mail = renderMail('reseller_invitation', {
    shopName: 'Evil\r\nBcc: victim@example.com',
    inviteUrl: 'https://x.example',
  });
  expect(mail.subject).toBe('Evil Bcc: victim@example.com invites you to become a reseller');
});

test('an unknown template is a programming error', () => {
  expect(() => renderMail('product-created', {})).toThrow(
    new MailTemplateError('unknown mail template "product-created"'),
  );
  expect(() => renderMail('toString', {})).toThrow(MailTemplateError);
  expect(mailTemplates).toEqual(['receipt', 'renewal_invoice', 'delivery', 'reseller_invitation']);
});

test('data of the wrong shape is refused with the field it is about', () => {
  const bad = (patch: Record<string, unknown>) => renderMail('receipt', { ...receipt, ...patch });
  expect(() => bad({ shopName: undefined })).toThrow('mail template receipt: shopName must be a non-empty string');
  expect(() => bad({ total: '1e3' })).toThrow('total must be a decimal string');
  expect(() => bad({ items: 'none' })).toThrow('items must be an array of objects');
  expect(() => bad({ items: [{ title: 'x', quantity: 0, price: '1' }] })).toThrow('items[0].quantity must be');
  expect(() => renderMail('delivery', { shopName: 'A', uniqid: 'u', items: [{ title: 't', content: [1] }] })).toThrow(
    'items[0].content must be an array of strings',
  );
});

test('mailDraft types the data of a template', () => {
  expect(mailDraft('a@example.com', 'receipt', receipt)).toEqual({
    to: 'a@example.com',
    template: 'receipt',
    data: receipt,
  });
});
