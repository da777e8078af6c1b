import type { PiiKind } from '../src/pii-guard';

/**
 * Personal values the privacy guard must catch, by kind: the forms people write in the
 * service's markets (the default `availableMarkets`: AT BE CH DE ES FR GB IE IT NL PL PT SE US),
 * and the disguises an outside tester used (full-width characters, digits of other scripts).
 */
export const PERSONAL_VALUES: ReadonlyArray<readonly [string, PiiKind]> = [
  // E-mail addresses
  ['jane.doe@example.com', 'email'],
  ['write to jane@mail.example.org today', 'email'],
  ['pii.evname@example.com', 'email'],
  ['user+tag@sub.example.co.uk', 'email'],
  ['JANE.DOE@EXAMPLE.COM', 'email'],
  ['jane＠example.com', 'email'],
  ['ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ', 'email'],
  ['jane﹫example.com', 'email'],
  ['jöhn.müller@exämple.de', 'email'],
  // IP addresses
  ['192.168.1.20', 'ip_address'],
  ['from 8.8.8.8 yesterday', 'ip_address'],
  ['10.0.0.1', 'ip_address'],
  ['2001:db8::ff00:42:8329', 'ip_address'],
  ['fe80:0:0:0:0:0:0:1', 'ip_address'],
  ['::ffff:192.0.2.1', 'ip_address'],
  ['١٩٢.١٦٨.١.٢٠', 'ip_address'],
  ['１９２．１６８．１．２０', 'ip_address'],
  ['१९२.१६८.१.२०', 'ip_address'],
  // Card numbers
  ['4111 1111 1111 1111', 'card_number'],
  ['4111111111111111', 'card_number'],
  ['5500-0000-0000-0004', 'card_number'],
  ['378282246310005', 'card_number'],
  ['6011 1111 1111 1117', 'card_number'],
  ['3530111333300000', 'card_number'],
  ['2223000048400011', 'card_number'],
  ['30569309025904', 'card_number'],
  ['٤١١١١١١١١١١١١١١١', 'card_number'],
  ['４１１１ １１１１ １１１１ １１１１', 'card_number'],
  // Germany
  ['01701234567', 'phone'],
  ['0170 1234567', 'phone'],
  ['030 12345678', 'phone'],
  ['030/12345678', 'phone'],
  ['(030) 1234567', 'phone'],
  ['0151-23456789', 'phone'],
  ['+49 (0)151 23456789', 'phone'],
  ['+49 170 1234567', 'phone'],
  ['0049 170 1234567', 'phone'],
  ['call me on 0170 1234567 tonight', 'phone'],
  ['Tel.: 030 12345678', 'phone'],
  // Austria
  ['0664 1234567', 'phone'],
  ['01 5123456', 'phone'],
  ['+43 664 1234567', 'phone'],
  // Switzerland
  ['079 123 45 67', 'phone'],
  ['044 668 18 00', 'phone'],
  ['+41 79 123 45 67', 'phone'],
  // Belgium
  ['0470 12 34 56', 'phone'],
  ['02 123 45 67', 'phone'],
  ['+32 470 12 34 56', 'phone'],
  // France
  ['06 12 34 56 78', 'phone'],
  ['0612345678', 'phone'],
  ['06.12.34.56.78', 'phone'],
  ['01 23 45 67 89', 'phone'],
  ['+33 6 12 34 56 78', 'phone'],
  // United Kingdom
  ['07700 900123', 'phone'],
  ['07700900123', 'phone'],
  ['020 7946 0958', 'phone'],
  ['0161 496 0000', 'phone'],
  ['+44 7700 900123', 'phone'],
  // Ireland
  ['085 123 4567', 'phone'],
  ['01 234 5678', 'phone'],
  ['+353 85 123 4567', 'phone'],
  // Italy
  ['347 1234567', 'phone'],
  ['3471234567', 'phone'],
  ['312 345 6789', 'phone'],
  ['06 1234 5678', 'phone'],
  ['+39 347 123 4567', 'phone'],
  // Netherlands
  ['06 12345678', 'phone'],
  ['06-12345678', 'phone'],
  ['020 123 4567', 'phone'],
  ['+31 6 12345678', 'phone'],
  // Poland
  ['512 345 678', 'phone'],
  ['22 123 45 67', 'phone'],
  ['+48 512 345 678', 'phone'],
  // Portugal
  ['912 345 678', 'phone'],
  ['21 123 4567', 'phone'],
  ['+351 912 345 678', 'phone'],
  // Spain
  ['612 34 56 78', 'phone'],
  ['612 345 678', 'phone'],
  ['91 123 45 67', 'phone'],
  ['+34 612 34 56 78', 'phone'],
  // Sweden
  ['070-123 45 67', 'phone'],
  ['08-123 456 78', 'phone'],
  ['0701234567', 'phone'],
  ['+46 70 123 45 67', 'phone'],
  // United States
  ['(415) 555-2671', 'phone'],
  ['(555) 123-4567', 'phone'],
  ['415-555-2671', 'phone'],
  ['415.555.2671', 'phone'],
  ['4155552671', 'phone'],
  ['1-415-555-2671', 'phone'],
  ['+1 415 555 2671', 'phone'],
  ['+14155552671', 'phone'],
  // Digits of other scripts
  ['٠١٧٠١٢٣٤٥٦٧', 'phone'],
  ['۰۱۷۰۱۲۳۴۵۶۷', 'phone'],
  ['०१७०१२३४५६७', 'phone'],
  ['০১৭০১২৩৪৫৬৭', 'phone'],
  ['０１７０１２３４５６７', 'phone'],
  ['＋４９ １７０ １２３４５６７', 'phone'],
];

const HEX = '0123456789abcdef';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const WORDS = ['Who wins tonight?', 'Kick-off', 'Home jersey', 'Finals Night', 'édition spéciale', 'Größe M', 'carousel', 'banner', 'Halbzeit', 'Tor!'];

/**
 * Ordinary strings of the kinds events carry (scores, prices, dates, times, SKUs, ids, UUIDs,
 * ISO timestamps, versions, order ids, numbers), drawn from `random` so a run can be replayed.
 */
export function ordinaryStrings(random: () => number, count: number): string[] {
  const int = (below: number) => Math.floor(random() * below);
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const chars = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[int(alphabet.length)]).join('');
  const uuid = () => {
    const hex = chars(HEX, 32).split('');
    hex[12] = pick(['4', '7']);
    hex[16] = pick(['8', '9', 'a', 'b']);
    const h = hex.join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
  const ean13 = () => {
    const body = `${pick(['40', '41', '42', '43', '30', '50', '54', '57', '76', '80', '84', '87', '90'])}${chars('0123456789', 10)}`;
    let sum = 0;
    for (let i = 0; i < 12; i++) sum += Number(body[i]) * (i % 2 ? 3 : 1);
    return `${body}${(10 - (sum % 10)) % 10}`;
  };
  // Between 2020 and 2030.
  const when = () => new Date(1_577_836_800_000 + int(315_360_000_000));
  const price = () => (random() * 10 ** (1 + int(5))).toFixed(2);
  const kinds: Array<() => string> = [
    () => `${int(10)}:${int(10)}`,
    () => `${int(6)} - ${int(6)}`,
    () => `Final score ${int(120)}-${int(120)}`,
    () => price(),
    () => `€${price()}`,
    () => `${Number(price()).toLocaleString('en-US', { minimumFractionDigits: 2 })} USD`,
    () => `${Number(price()).toLocaleString('de-DE', { minimumFractionDigits: 2 })} €`,
    () => when().toISOString().slice(0, 10),
    () => when().toLocaleDateString('de-DE', { day: '2-digit', month: '2-digit', year: 'numeric' }),
    () => when().toLocaleDateString('en-US'),
    () => when().toLocaleDateString('en-GB'),
    () => `${when().toLocaleDateString('de-DE')} ${pad(int(24), 2)}:${pad(int(60), 2)}`,
    () => `${when().toISOString().slice(0, 10)} ${pad(int(24), 2)}:${pad(int(60), 2)}:${pad(int(60), 2)}`,
    () => `${pad(int(24), 2)}:${pad(int(60), 2)}`,
    () => `${pad(int(24), 2)}:${pad(int(60), 2)}:${pad(int(60), 2)}`,
    () => `${pad(int(24), 2)}:${pad(int(60), 2)}-${pad(int(24), 2)}:${pad(int(60), 2)}`,
    () => when().toISOString(),
    () => `SKU-${int(1_000_000)}`,
    () => `${chars(LETTERS, 2 + int(2))}-${pad(int(10_000), 4)}-${pick(['XS', 'S', 'M', 'L', 'XL'])}`,
    () => `${pad(int(10_000), 4)}-${pick(['RED', 'BLU', 'BLK'])}-${pick(['S', 'M', 'L'])}`,
    () => `${chars(LETTERS, 3)}${int(100_000_000)}`,
    () => ean13(),
    () => `user-${int(10_000_000)}`,
    () => `u_${chars(HEX, 12)}`,
    () => `svc_${chars(CROCKFORD, 26)}`,
    () => `svc_sample${chars(HEX, 32)}`,
    () => String(int(100_000_000)),
    () => uuid(),
    () => `ord_${uuid()}`,
    () => `order-${int(10_000_000_000)}`,
    () => `#${int(10_000_000)}`,
    () => `${int(20)}.${int(20)}.${int(100)}`,
    () => `v${int(20)}.${int(20)}.${int(100)}-beta.${int(10)}`,
    () => `${(random() * 100).toFixed(1)}%`,
    () => (random() * 1000).toFixed(int(10)),
    () => String(Math.floor(when().getTime() / 1000)),
    () => String(when().getTime()),
    () => `${pick(WORDS)} ${int(100)}`,
    () => `x${1 + int(20)}`,
    () => `#${chars(HEX, 6)}`,
    () => `PT${int(5)}H${int(60)}M`,
  ];
  return Array.from({ length: count }, () => pick(kinds)());
}
