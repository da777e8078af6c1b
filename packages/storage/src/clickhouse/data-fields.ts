import { sqlString } from './sql-literal';

/**
 * The fields of an event's `data` the dashboard reads, stored beside it as columns of `events`
 * (migration 5): every panel that reads events on the spot (the current hour, a range's cut
 * hours) and every derivation of an hour reads these columns instead of taking `data` apart.
 * ClickHouse 18.16 has no JSONExtract and took tens of milliseconds to analyse the expressions
 * below in each such query, and microseconds per row to run them.
 *
 * Nodes fill the columns from the parsed `data` when they encode an event (`dataFieldValues`);
 * parts written before the migration compute them on read from `data` with the same meaning
 * (`DATA_FIELD_COLUMNS`, the columns' DEFAULT), as does an insert that leaves them out.
 */

/** A field of `data` the panels read, as its column's name. */
export type DataFieldColumn = 'data_sponsor_id' | 'data_poll_id' | 'data_option_index' | 'data_option_selected' | 'data_contest_id' | 'data_currency';

/** A JSON string literal (escapes included), and what is neither a bracket nor a quote. */
const JSON_STRING = sqlString('"(?:[^"\\\\]|\\\\.)*"');
const NOT_BRACKET_OR_QUOTE = sqlString('[^\\[\\]{}"]');
const NOT_OPENING = sqlString('[^\\[{]');

/**
 * Where `"name":` occurs as a key of `data` itself: the number of the occurrence (1, 2…), 0 when
 * `data` has no such key. `visitParamExtract*` take the first `"name":` at any depth, so a custom
 * context object holding the key before the top-level one (`{"ctx":{"sponsorId":"x"},"sponsorId":"acme"}`)
 * would be read instead. `data` is split at each `"name":`; an occurrence is the top-level key
 * when the text before it, its JSON strings taken out, holds no stray quote (it is not inside a
 * string or a longer key) and one more opening bracket than closing ones (the object's own).
 */
function topLevelOccurrence(name: string): { parts: string; index: string } {
  const key = sqlString(`"${name}":`);
  const parts = `splitByString(${key}, data)`;
  const brackets = `arrayMap(k -> replaceRegexpAll(replaceRegexpAll(arrayStringConcat(arraySlice(${parts}, 1, k), ${key}), ${JSON_STRING}, ''), ${NOT_BRACKET_OR_QUOTE}, ''),
    arrayEnumerate(arrayPopFront(${parts})))`;
  const index = `arrayFirstIndex(b -> position(b, '"') = 0 AND 2 * length(replaceRegexpAll(b, ${NOT_OPENING}, '')) - length(b) = 1, ${brackets})`;
  return { parts, index };
}

/** A top-level string field of `data`, unescaped ('' when absent or not a string). */
function dataString(name: string): string {
  const { parts, index } = topLevelOccurrence(name);
  return `if(${index} = 0, '', visitParamExtractString(concat(${sqlString(`{"${name}":`)}, arrayElement(${parts}, ${index} + 1)), ${sqlString(name)}))`;
}

/**
 * A top-level number field of `data` as JSON.stringify wrote it ('' when absent or not a number).
 * Not `visitParamExtractRaw`: 18.16 crashes on text it cannot close (`{"optionIndex":not json`),
 * and both branches of an `if` run on every row, so a single stored row of such text would take
 * the server down whenever a part holding it is read or merged.
 */
function dataNumber(name: string): string {
  const { parts, index } = topLevelOccurrence(name);
  return `if(${index} = 0, '', extract(arrayElement(${parts}, ${index} + 1), ${sqlString('^-?[0-9]+(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')}))`;
}

/**
 * Each column and its value computed from `data` in SQL: a top-level string field ('' when
 * absent or not a string); `data_option_index` the JSON text of `optionIndex` when a number
 * (`2`; '' otherwise: the vote rule counts whole option numbers only); `data_currency` the string
 * `currency`, '?' when `data` has none.
 */
export const DATA_FIELD_COLUMNS: ReadonlyArray<[DataFieldColumn, string]> = [
  ['data_sponsor_id', dataString('sponsorId')],
  ['data_poll_id', dataString('pollId')],
  ['data_option_index', dataNumber('optionIndex')],
  ['data_option_selected', dataString('optionSelected')],
  ['data_contest_id', dataString('contestId')],
  ['data_currency', `if(${topLevelOccurrence('currency').index} > 0, ${dataString('currency')}, '?')`],
];

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * The columns' values of an event's `data` (JSON text of an object, as ingest writes it with
 * JSON.stringify), the same as `DATA_FIELD_COLUMNS` computes in SQL; text that is not a JSON
 * object has none of the fields. (A parsed object's keys are its own: JSON.parse never sets a
 * prototype, so a field absent is `undefined`.)
 */
export function dataFieldValues(data: string): Record<DataFieldColumn, string> {
  let fields: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(data);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) fields = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: no field.
  }
  const { sponsorId, pollId, optionIndex, optionSelected, contestId, currency } = fields;
  return {
    data_sponsor_id: text(sponsorId),
    data_poll_id: text(pollId),
    // A finite number's text, as JSON.stringify writes it.
    data_option_index: typeof optionIndex === 'number' ? String(optionIndex) : '',
    data_option_selected: text(optionSelected),
    data_contest_id: text(contestId),
    data_currency: currency === undefined ? '?' : text(currency),
  };
}
