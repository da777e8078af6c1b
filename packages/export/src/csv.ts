import { CSV_COLUMNS } from '@svc/protocol';

/** The CSV export's first record: the column names of DESIGN 5.3 (none needs quoting). */
export const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;
